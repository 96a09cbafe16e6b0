package labelroute

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// containerCount is how many containers are started one after another.
const containerCount = 20

// pollEvery is the probe interval: the resolution of the measurement.
const pollEvery = 2 * time.Millisecond

// percentile returns the p-th percentile (nearest rank) of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	rank := int(float64(len(ds))*p/100+0.999999) - 1
	return ds[max(0, min(rank, len(ds)-1))]
}

func summary(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	return fmt.Sprintf("p50 %s, p95 %s, max %s (n=%d)", ms(percentile(s, 50)), ms(percentile(s, 95)), ms(s[len(s)-1]), len(s))
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestLabelToRoute starts Levee with the Docker provider, then starts 20
// labelled echo containers one after another and, for each, times docker
// start returning → first 200 through Levee; then removes them one by one
// and times removal returning → first 503. Debounce: LEVEE_BENCH_DEBOUNCE
// (a Go duration, default Levee's own default).
func TestLabelToRoute(t *testing.T) {
	if os.Getenv("LEVEE_BENCH_DOCKER") != "1" {
		t.Skip("set LEVEE_BENCH_DOCKER=1 to measure label-to-route latency on the Docker Engine")
	}
	cli := dockertest.Require(t) // also removes every object labelled levee.test=<run id> at the end
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// EchoImage names ./cmd/echo relative to the current module, which is
	// bench here; the full import path resolves through the replace.
	image := dockertest.BuildImage(t, cli, "github.com/levee-proxy/levee/cmd/echo", fmt.Sprintf("EXPOSE %d", dockertest.EchoPort))
	network := dockertest.Network(t, cli)
	runID := dockertest.RunID(t)

	dir := t.TempDir()
	bin := filepath.Join(dir, "levee")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/levee")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building levee: %v\n%s", err, out)
	}
	proxyAddr, apiAddr := freeAddr(t), freeAddr(t)
	args := []string{"serve", "--docker=true", "--http-listen", proxyAddr, "--api-listen", apiAddr,
		"--state-file", filepath.Join(dir, "state.json"), "--access-log=false", "--log-level", "warn"}
	if d := os.Getenv("LEVEE_BENCH_DEBOUNCE"); d != "" {
		args = append(args, "--docker-debounce", d)
	}
	cmd := exec.Command(bin, args...)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting levee: %v", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	status := func(ctx context.Context, host string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+proxyAddr+"/", nil)
		req.Host = host
		resp, err := hc.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// waitFor probes host every pollEvery until one probe answers want and
	// returns the time from `from` to that answer; it fails the test after
	// 30 s. Probes run concurrently: after a container is removed a probe
	// can hang on a dial to its vanished address (until --dial-timeout)
	// while the next probes already get the new answer, and a sequential
	// loop would measure the hung probe instead of the route change.
	waitFor := func(host string, want int, from time.Time) time.Duration {
		pctx, stop := context.WithTimeout(ctx, 30*time.Second)
		defer stop()
		got := make(chan time.Duration, 1)
		tick := time.NewTicker(pollEvery)
		defer tick.Stop()
		var wg sync.WaitGroup
		defer wg.Wait()
		defer stop() // runs before wg.Wait: in-flight probes end with pctx
		for {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if status(pctx, host) == want {
					select {
					case got <- time.Since(from):
					default:
					}
				}
			}()
			select {
			case d := <-got:
				return d
			case <-pctx.Done():
				t.Fatalf("%s did not answer %d within 30s (last %d); levee log:\n%s", host, want, status(ctx, host), logs.String())
			case <-tick.C:
			}
		}
	}
	ready := fmt.Sprintf("http://%s/ready", apiAddr)
	if err := dockertest.Poll(30*time.Second, func() error {
		resp, err := hc.Get(ready)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/ready answered %d", resp.StatusCode)
		}
		return nil
	}); err != nil {
		t.Fatalf("levee not ready: %v; log:\n%s", err, logs.String())
	}

	ids := make([]string, containerCount)
	hosts := make([]string, containerCount)
	var up, down []time.Duration
	for i := range containerCount {
		svc := fmt.Sprintf("lr%02d", i)
		hosts[i] = fmt.Sprintf("%s-%s.labelroute.local", svc, runID)
		ids[i] = dockertest.Create(t, cli, dockertest.Spec{
			Image:    image,
			Networks: []string{network},
			Env:      []string{"ECHO_NAME=" + svc},
			Labels: map[string]string{
				"levee.enable":                "true",
				"levee.http." + svc + ".host": hosts[i],
				"levee.http." + svc + ".port": fmt.Sprint(dockertest.EchoPort),
			},
		})
		if got := status(ctx, hosts[i]); got != http.StatusNotFound {
			t.Fatalf("%s answered %d before its container started, want 404", hosts[i], got)
		}
		if _, err := cli.ContainerStart(ctx, ids[i], client.ContainerStartOptions{}); err != nil {
			t.Fatalf("starting container %s: %v", ids[i], err)
		}
		up = append(up, waitFor(hosts[i], http.StatusOK, time.Now()))
	}
	for i, id := range ids {
		if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
			t.Fatalf("removing container %s: %v", id, err)
		}
		down = append(down, waitFor(hosts[i], http.StatusServiceUnavailable, time.Now()))
	}
	fmt.Printf("label-to-route (start returned → first 200): %s\n", summary(up))
	fmt.Printf("removal (remove returned → first 503):       %s\n", summary(down))
	fmt.Printf("start samples: %v\nremove samples: %v\n", up, down)
}
