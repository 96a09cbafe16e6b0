package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/swarm"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// swarmToken is the API token of the Levee container: its API listens on
// all interfaces so that the test can reach it.
const swarmToken = "levee-i15-e2e-admin-token"

// swarmEnv is a single-node swarm with an attachable overlay network and a
// Levee container attached to it (and to the default bridge, where the
// test reaches it).
type swarmEnv struct {
	t       *testing.T
	cli     *client.Client
	runID   string
	echo    string // echo image tag
	netID   string
	netName string
	levee   string // Levee's container ID
	leveeIP string // on the default bridge
}

// requireSwarm makes the engine a swarm manager for t: it initialises a
// single-node swarm when the engine is in none, and leaves it when t ends
// (even on failure); a swarm already there is used and left alone.
func requireSwarm(t *testing.T, cli *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	info, err := cli.Info(ctx)
	if err != nil {
		t.Fatalf("docker info: %v", err)
	}
	switch info.Swarm.LocalNodeState {
	case swarm.LocalNodeStateActive:
		if !info.Swarm.ControlAvailable {
			t.Fatal("the engine is a swarm worker: the Swarm e2e needs a manager")
		}
		return
	case swarm.LocalNodeStateInactive:
	default:
		t.Fatalf("the engine's swarm is %q: want inactive or active", info.Swarm.LocalNodeState)
	}
	if _, err := cli.SwarmInit(ctx, swarm.InitRequest{ListenAddr: "127.0.0.1:2377", AdvertiseAddr: "127.0.0.1"}); err != nil {
		t.Fatalf("docker swarm init --advertise-addr 127.0.0.1: %v", err)
	}
	t.Logf("initialised a single-node swarm; it is left when the test ends")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := cli.SwarmLeave(ctx, true); err != nil {
			t.Errorf("docker swarm leave --force: %v", err)
		}
	})
}

func newSwarmEnv(t *testing.T) *swarmEnv {
	cli := dockertest.Require(t)
	e := &swarmEnv{t: t, cli: cli, runID: dockertest.RunID(t)}
	e.echo = dockertest.EchoImage(t, cli)
	leveeImage := dockertest.BuildImage(t, cli, "./cmd/levee", "")
	requireSwarm(t, cli)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.netName = "levee-i15-net-" + e.runID
	resp, err := cli.NetworkCreate(ctx, e.netName, network.CreateOptions{
		Driver: "overlay", Attachable: true, Labels: map[string]string{dockertest.Label: e.runID},
	})
	if err != nil {
		t.Fatalf("create overlay network %s: %v", e.netName, err)
	}
	e.netID = resp.ID
	t.Cleanup(func() {
		// The swarm keeps a removed service's tasks on the network for a
		// moment after their containers are gone.
		err := dockertest.Poll(time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := cli.NetworkRemove(ctx, e.netID); err != nil && !cerrdefs.IsNotFound(err) {
				return err
			}
			return nil
		})
		if err != nil {
			t.Errorf("remove network %s: %v", e.netName, err)
		}
	})

	e.levee = e.startLevee(ctx, leveeImage)
	return e
}

// startLevee runs Levee as a container with the engine's socket, on the
// default bridge (for the test) and the overlay network (for the tasks).
func (e *swarmEnv) startLevee(ctx context.Context, image string) string {
	t := e.t
	name := "levee-i15-levee-" + e.runID
	cfg := &container.Config{
		Image:  image,
		Labels: map[string]string{dockertest.Label: e.runID},
		Cmd: []string{"serve", "--docker=false", "--swarm", "--http-listen", ":8080", "--api-listen", ":3035",
			"--api-token", swarmToken, "--log-format", "json", "--log-level", "debug", "--state-file", "/levee-state.json"},
	}
	host := &container.HostConfig{Binds: []string{"/var/run/docker.sock:/var/run/docker.sock"}}
	resp, err := e.cli.ContainerCreate(ctx, cfg, host, &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"bridge": {}}}, nil, name)
	if err != nil {
		t.Fatalf("create the Levee container: %v", err)
	}
	// Cleanups run last first: the logs are read, then the container
	// goes, so that the network can go after it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove the Levee container: %v", err)
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			e.dumpLogs(resp.ID)
		}
	})
	dockertest.Connect(t, e.cli, e.netName, resp.ID)
	dockertest.Start(t, e.cli, resp.ID)
	e.leveeIP = dockertest.IPs(t, e.cli, resp.ID)["bridge"]
	dockertest.Eventually(t, 30*time.Second, func() error {
		var ready struct {
			Ready bool `json:"ready"`
		}
		return e.api("/ready", &ready)
	})
	return resp.ID
}

func (e *swarmEnv) dumpLogs(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.cli.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		e.t.Logf("levee logs: %v", err)
		return
	}
	defer r.Close()
	var out strings.Builder
	_, _ = stdcopy.StdCopy(&out, &out, r)
	b := out.String()
	if len(b) > 20000 {
		b = b[len(b)-20000:]
	}
	e.t.Logf("levee logs (tail):\n%s", b)
}

// api GETs path from Levee's API into v.
func (e *swarmEnv) api(path string, v any) error {
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.leveeIP+":3035"+path, nil)
	req.Header.Set("Authorization", "Bearer "+swarmToken)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", path, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// backends returns the addresses of entrypoint id's backends, sorted.
func (e *swarmEnv) backends(id string) ([]string, error) {
	var v struct {
		Entrypoint struct {
			Backends []struct {
				Address string `json:"address"`
				Port    int    `json:"port"`
			} `json:"backends"`
		} `json:"entrypoint"`
	}
	if err := e.api("/entrypoints/"+id, &v); err != nil {
		return nil, err
	}
	var out []string
	for _, b := range v.Entrypoint.Backends {
		out = append(out, b.Address)
	}
	sort.Strings(out)
	return out, nil
}

// get sends one request for host through Levee and returns the answering
// echo's host name (its container ID).
func (e *swarmEnv) get(host string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.leveeIP+":8080/", nil)
	req.Host = host
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d, diagnostic %q", resp.StatusCode, resp.Header.Get("X-Levee-Diagnostic"))
	}
	return resp.Header.Get("X-Echo-Hostname"), nil
}

// service creates a replicated echo service on the overlay network with
// the given service labels (deploy.labels), removed when the test ends.
func (e *swarmEnv) service(suffix string, replicas uint64, labels map[string]string) string {
	t := e.t
	name := "levee-i15-" + suffix + "-" + e.runID
	delay := 100 * time.Millisecond
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: name, Labels: labels},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{Image: e.echo, Labels: map[string]string{dockertest.Label: e.runID}},
			Networks:      []swarm.NetworkAttachmentConfig{{Target: e.netID}},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionAny, Delay: &delay},
		},
		Mode: swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &replicas}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := e.cli.ServiceCreate(ctx, spec, swarm.ServiceCreateOptions{})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.cli.ServiceRemove(ctx, resp.ID); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove service %s: %v", name, err)
			return
		}
		// Its tasks leave the network asynchronously; the network can go
		// once they have.
		err := dockertest.Poll(time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := e.cli.ContainerList(ctx, container.ListOptions{All: true,
				Filters: filters.NewArgs(filters.Arg("label", "com.docker.swarm.service.id="+resp.ID))})
			if err == nil && len(cs) > 0 {
				err = fmt.Errorf("%d task containers left", len(cs))
			}
			return err
		})
		if err != nil {
			t.Logf("service %s: %v (dockertest's cleanup removes them)", name, err)
		}
	})
	return resp.ID
}

// scale sets the replicas of service id.
func (e *swarmEnv) scale(id string, replicas uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, _, err := e.cli.ServiceInspectWithRaw(ctx, id, swarm.ServiceInspectOptions{})
	if err != nil {
		e.t.Fatalf("inspect service %s: %v", id, err)
	}
	s.Spec.Mode.Replicated.Replicas = &replicas
	if _, err := e.cli.ServiceUpdate(ctx, id, s.Version, s.Spec, swarm.ServiceUpdateOptions{}); err != nil {
		e.t.Fatalf("scale service %s to %d: %v", id, replicas, err)
	}
}

// running returns the tasks of service id that run, by task ID.
func (e *swarmEnv) running(id string) (map[string]swarm.Task, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, err := e.cli.TaskList(ctx, swarm.TaskListOptions{Filters: filters.NewArgs(filters.Arg("service", id))})
	if err != nil {
		return nil, err
	}
	out := map[string]swarm.Task{}
	for _, tk := range ts {
		if tk.Status.State == swarm.TaskStateRunning && tk.DesiredState == swarm.TaskStateRunning {
			out[tk.ID] = tk
		}
	}
	return out, nil
}

// taskIPs are the overlay addresses of tasks, sorted.
func (e *swarmEnv) taskIPs(tasks map[string]swarm.Task) []string {
	var out []string
	for _, tk := range tasks {
		for _, a := range tk.NetworksAttachments {
			if a.Network.ID == e.netID && len(a.Addresses) > 0 {
				ip, _, _ := strings.Cut(a.Addresses[0], "/")
				out = append(out, ip)
			}
		}
	}
	sort.Strings(out)
	return out
}

// converge waits until service id runs want tasks and Levee's entrypoint
// has exactly their addresses as backends, and returns how long Levee
// lagged behind the swarm (from the first moment the swarm ran exactly
// those tasks, as seen by polling every 25 ms).
func (e *swarmEnv) converge(id, ep string, want int, timeout time.Duration) time.Duration {
	e.t.Helper()
	var swarmAt time.Time
	var last []string
	err := dockertest.Poll(timeout, func() error {
		tasks, err := e.running(id)
		if err != nil {
			return err
		}
		ips := e.taskIPs(tasks)
		if len(ips) != want {
			swarmAt = time.Time{}
			return fmt.Errorf("swarm runs %d tasks, want %d", len(ips), want)
		}
		if swarmAt.IsZero() || !slices.Equal(ips, last) {
			swarmAt, last = time.Now(), ips
		}
		got, err := e.backends(ep)
		if err != nil {
			return err
		}
		if !slices.Equal(got, ips) {
			return fmt.Errorf("levee backends %v, swarm tasks %v", got, ips)
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return time.Since(swarmAt)
}

// The scenario on the real engine: a labelled service with two
// replicas on an attachable overlay, Levee in a container on it; both tasks
// are reached; scaling to 3 and to 1 shows within a second; a killed task
// is removed and its replacement added; a bad deploy.labels value gives a
// diagnostic naming the service; lb.swarm=true routes through the VIP.
func TestSwarmServiceThroughLevee(t *testing.T) {
	e := newSwarmEnv(t)
	const host = "swarm.i15.test"
	web := e.service("web", 2, map[string]string{
		"levee.enable": "true", "levee.http.web.host": host, "levee.http.web.port": "8080",
	})
	const ep = "web@swarm"

	t.Run("both tasks reached", func(t *testing.T) {
		e.converge(web, ep, 2, 90*time.Second)
		seen := map[string]bool{}
		dockertest.Eventually(t, 10*time.Second, func() error {
			h, err := e.get(host)
			if err != nil {
				return err
			}
			seen[h] = true
			if len(seen) < 2 {
				return fmt.Errorf("reached %v", seen)
			}
			return nil
		})
	})

	t.Run("scale to 3 and to 1 within a second", func(t *testing.T) {
		e.scale(web, 3)
		if lag := e.converge(web, ep, 3, 60*time.Second); lag > time.Second {
			t.Errorf("scale to 3: Levee followed the swarm after %v, want within 1s", lag)
		} else {
			t.Logf("scale to 3: Levee followed the swarm within %v", lag)
		}
		start := time.Now()
		e.scale(web, 1)
		dockertest.Eventually(t, 30*time.Second, func() error {
			got, err := e.backends(ep)
			if err != nil || len(got) != 1 {
				return fmt.Errorf("backends %v (%v)", got, err)
			}
			return nil
		})
		if d := time.Since(start); d > time.Second {
			t.Errorf("scale to 1: Levee had one backend %v after the update, want within 1s", d)
		} else {
			t.Logf("scale to 1: one backend %v after the update", d)
		}
		e.converge(web, ep, 1, 60*time.Second)
	})

	t.Run("scale down under load", func(t *testing.T) {
		e.scale(web, 3)
		e.converge(web, ep, 3, 60*time.Second)
		stop := make(chan struct{})
		type result struct {
			ok, failed int
			errs       []string
		}
		results := make(chan result, 4)
		for w := 0; w < 4; w++ {
			go func() {
				var r result
				for {
					select {
					case <-stop:
						results <- r
						return
					default:
					}
					if _, err := e.get(host); err != nil {
						r.failed++
						if len(r.errs) < 3 {
							r.errs = append(r.errs, err.Error())
						}
					} else {
						r.ok++
					}
				}
			}()
		}
		e.scale(web, 1)
		e.converge(web, ep, 1, 60*time.Second)
		// Keep the load on until the stopped tasks' containers are gone.
		dockertest.Eventually(t, 30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := e.cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "com.docker.swarm.service.id="+web))})
			if err == nil && len(cs) != 1 {
				err = fmt.Errorf("%d task containers running", len(cs))
			}
			return err
		})
		close(stop)
		var total result
		for w := 0; w < 4; w++ {
			r := <-results
			total.ok += r.ok
			total.failed += r.failed
			total.errs = append(total.errs, r.errs...)
		}
		t.Logf("scale 3 -> 1 under load: %d requests answered, %d failed %v", total.ok, total.failed, total.errs)
		if total.ok == 0 || total.failed > 0 {
			t.Errorf("scale-down under load: %d ok, %d failed: %v", total.ok, total.failed, total.errs)
		}
	})

	t.Run("killed task replaced", func(t *testing.T) {
		tasks, err := e.running(web)
		if err != nil || len(tasks) != 1 {
			t.Fatalf("running tasks %v (%v)", tasks, err)
		}
		var victim swarm.Task
		for _, tk := range tasks {
			victim = tk
		}
		oldIPs := e.taskIPs(tasks)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.cli.ContainerKill(ctx, victim.Status.ContainerStatus.ContainerID, "KILL"); err != nil {
			t.Fatalf("kill task %s: %v", victim.ID, err)
		}
		killed := time.Now()
		dockertest.Eventually(t, 10*time.Second, func() error {
			got, err := e.backends(ep)
			if err != nil {
				return err
			}
			if slices.Contains(got, oldIPs[0]) {
				return fmt.Errorf("killed task %s still a backend: %v", oldIPs[0], got)
			}
			return nil
		})
		t.Logf("killed task removed after %v", time.Since(killed))
		dockertest.Eventually(t, 60*time.Second, func() error {
			now, err := e.running(web)
			if err != nil {
				return err
			}
			if _, same := now[victim.ID]; same || len(now) != 1 {
				return fmt.Errorf("no replacement yet: %d running", len(now))
			}
			got, err := e.backends(ep)
			if err != nil {
				return err
			}
			if want := e.taskIPs(now); !slices.Equal(got, want) {
				return fmt.Errorf("backends %v, replacement %v", got, want)
			}
			_, err = e.get(host)
			return err
		})
	})

	t.Run("bad deploy.labels value names the service", func(t *testing.T) {
		name := "levee-i15-bad-" + e.runID
		e.service("bad", 0, map[string]string{
			"levee.enable": "true", "levee.http.bad.host": "bad.i15.test", "levee.http.bad.port": "eighty",
		})
		dockertest.Eventually(t, 20*time.Second, func() error {
			var report struct {
				Objects []struct {
					Provider    string `json:"provider"`
					Object      string `json:"object"`
					Diagnostics []struct {
						Code string `json:"code"`
						Key  string `json:"key"`
					} `json:"diagnostics"`
				} `json:"objects"`
			}
			if err := e.api("/diagnostics", &report); err != nil {
				return err
			}
			for _, o := range report.Objects {
				for _, d := range o.Diagnostics {
					if o.Provider == "swarm" && o.Object == name && d.Code == "W001" && d.Key == "levee.http.bad.port" {
						return nil
					}
				}
			}
			return fmt.Errorf("no W001 on swarm service %s: %+v", name, report.Objects)
		})
	})

	t.Run("VIP mode", func(t *testing.T) {
		const vipHost = "vip.i15.test"
		vip := e.service("vip", 2, map[string]string{
			"levee.enable": "true", "levee.http.vip.host": vipHost, "levee.http.vip.port": "8080", "levee.http.vip.lb.swarm": "true",
		})
		// The swarm allocates the virtual IP shortly after the service
		// is created.
		addr := ""
		dockertest.Eventually(t, 30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, _, err := e.cli.ServiceInspectWithRaw(ctx, vip, swarm.ServiceInspectOptions{})
			if err != nil {
				return err
			}
			for _, v := range s.Endpoint.VirtualIPs {
				if v.NetworkID == e.netID {
					addr, _, _ = strings.Cut(v.Addr, "/")
					return nil
				}
			}
			return fmt.Errorf("service has no virtual IP on %s: %+v", e.netName, s.Endpoint.VirtualIPs)
		})
		dockertest.Eventually(t, 90*time.Second, func() error {
			got, err := e.backends("vip@swarm")
			if err != nil {
				return err
			}
			if !slices.Equal(got, []string{addr}) {
				return fmt.Errorf("backends %v, want the virtual IP %s", got, addr)
			}
			return nil
		})
		// The virtual IP is the kernel's IPVS balancer: an engine whose
		// kernel has none ("Could not get ipvs family information" in
		// its log) creates the address but nothing answers on it.
		if _, err := os.Stat("/proc/net/ip_vs"); err != nil {
			t.Logf("the kernel has no IPVS (%v): the swarm cannot balance on its virtual IPs, so only Levee's choice of the VIP is checked, not traffic through it", err)
			return
		}
		dockertest.Eventually(t, 90*time.Second, func() error {
			_, err := e.get(vipHost)
			return err
		})
	})
}
