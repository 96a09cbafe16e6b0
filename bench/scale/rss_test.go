package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// stateRecord and stateFile mirror the API store's on-disk format
// (api/store/store.go): version 1, one record per entrypoint with its id, creation
// time and canonical payload (config.EncodeEntrypoint output).
type stateRecord struct {
	ID      string          `json:"id"`
	Created time.Time       `json:"created"`
	Payload json.RawMessage `json:"payload"`
}

type stateFile struct {
	Version     int           `json:"version"`
	Entrypoints []stateRecord `json:"entrypoints"`
}

// writeState writes eps as a state file at path.
func writeState(t *testing.T, path string, eps []config.Entrypoint) {
	t.Helper()
	doc := stateFile{Version: 1}
	for _, ep := range eps {
		payload, err := config.EncodeEntrypoint(ep)
		if err != nil {
			t.Fatalf("encoding entrypoint %s: %v", ep.ID, err)
		}
		doc.Entrypoints = append(doc.Entrypoints, stateRecord{ID: ep.ID, Created: ep.Created, Payload: payload})
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatalf("encoding state file: %v", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatalf("writing state file %s: %v", path, err)
	}
}

// freeAddr returns a loopback address nobody listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// vmRSS reads a process's resident set size in KiB from /proc.
func vmRSS(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading status of pid %d: %w", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// TestServeRSS starts `levee serve` with a state file of 10,000 API
// entrypoints and reports its start-up time to the last route answering,
// its RSS at idle, and its RSS after 5 s of load spread over all hosts.
// It builds the binary and takes a few seconds of both cores, so it runs
// only with LEVEE_BENCH_RSS=1.
func TestServeRSS(t *testing.T) {
	if os.Getenv("LEVEE_BENCH_RSS") != "1" {
		t.Skip("set LEVEE_BENCH_RSS=1 to measure the RSS of levee serve with 10,000 routes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "levee")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/levee")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building levee: %v\n%s", err, out)
	}

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	defer backend.Close()
	state := filepath.Join(dir, "state.json")
	writeState(t, state, apiEntrypoints(t, routeCount, backend.Listener.Addr().String()))

	proxyAddr, apiAddr := freeAddr(t), freeAddr(t)
	start := time.Now()
	cmd := exec.CommandContext(ctx, bin, "serve", "--docker=false", "--http-listen", proxyAddr, "--api-listen", apiAddr,
		"--state-file", state, "--access-log=false", "--log-level", "warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting levee: %v", err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	pid := cmd.Process.Pid

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	get := func(host string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+proxyAddr+"/", nil)
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	last := apiHost(routeCount - 1)
	deadline := time.Now().Add(time.Minute)
	for {
		code, err := get(last)
		if err == nil && code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the last of %d routes did not answer 200 within a minute (last: %d, %v); levee log:\n%s", routeCount, code, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not synchronisation
	}
	ready := time.Since(start)

	// Idle: the first request has been served; give the runtime's
	// background scavenger a moment, then sample.
	time.Sleep(2 * time.Second) // measurement window, not synchronisation
	idle, err := vmRSS(pid)
	if err != nil {
		t.Fatal(err)
	}

	// Load: 32 clients for 5 s over all hosts, so every route is matched.
	var served atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(5 * time.Second)
	for c := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; time.Now().Before(stop); i += 32 {
				if code, err := get(apiHost(i % routeCount)); err == nil && code == http.StatusOK {
					served.Add(1)
				}
			}
		}()
	}
	time.Sleep(4500 * time.Millisecond) // sample near the end of the load window
	loaded, err := vmRSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if served.Load() == 0 {
		t.Fatalf("no request was served under load; levee log:\n%s", logs.String())
	}
	t.Logf("levee serve with %d routes: all routes answering %.2fs after exec; RSS idle %.1f MiB, under load %.1f MiB (%d requests in 5s)",
		routeCount, ready.Seconds(), float64(idle)/1024, float64(loaded)/1024, served.Load())
}
