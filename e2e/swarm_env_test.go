package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

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
	// proxy and apiAddr are where the test reaches Levee: its address on
	// the default bridge (a container), or the host's published ports (a
	// service).
	proxy   string
	apiAddr string
}

// requireSwarm makes the engine a swarm manager for t: it initialises a
// single-node swarm when the engine is in none, and leaves it when t ends
// (even on failure); a swarm already there is used and left alone.
func requireSwarm(t *testing.T, cli *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		t.Fatalf("docker info: %v", err)
	}
	info := r.Info
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
	if _, err := cli.SwarmInit(ctx, client.SwarmInitOptions{ListenAddr: "127.0.0.1:2377", AdvertiseAddr: "127.0.0.1"}); err != nil {
		t.Fatalf("docker swarm init --advertise-addr 127.0.0.1: %v", err)
	}
	t.Logf("initialised a single-node swarm; it is left when the test ends")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.SwarmLeave(ctx, client.SwarmLeaveOptions{Force: true}); err != nil {
			t.Errorf("docker swarm leave --force: %v", err)
		}
	})
}

// newSwarmEnv prepares the swarm, the images and the overlay network, and
// starts Levee: as a Swarm service on the manager when asService (the
// stack of docs/swarm.md), else as a plain container.
func newSwarmEnv(t *testing.T, asService bool) *swarmEnv {
	cli := dockertest.Require(t)
	e := &swarmEnv{t: t, cli: cli, runID: dockertest.RunID(t)}
	e.echo = dockertest.EchoImage(t, cli)
	leveeImage := dockertest.BuildImage(t, cli, "./cmd/levee", "")
	requireSwarm(t, cli)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e.netName = "levee-i15-net-" + e.runID
	resp, err := cli.NetworkCreate(ctx, e.netName, client.NetworkCreateOptions{
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
			if _, err := cli.NetworkRemove(ctx, e.netID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
				return err
			}
			return nil
		})
		if err != nil {
			t.Errorf("remove network %s: %v", e.netName, err)
		}
	})

	if asService {
		e.startLeveeService(leveeImage)
	} else {
		e.startLevee(ctx, leveeImage)
	}
	dockertest.Eventually(t, 60*time.Second, func() error {
		var ready struct {
			Ready bool `json:"ready"`
		}
		return e.api("/ready", &ready)
	})
	return e
}

// leveeArgs are the serve flags of Levee in both forms.
var leveeArgs = []string{"serve", "--docker=false", "--swarm", "--http-listen", ":8080", "--api-listen", ":3035",
	"--api-token", swarmToken, "--log-format", "json", "--log-level", "debug", "--state-file", "/levee-state.json"}

// leveeArgs are leveeArgs for this run: only its services are routed.
func (e *swarmEnv) leveeArgs() []string {
	return append(slices.Clone(leveeArgs), "--docker-constraints", dockertest.Constraint(e.runID))
}

// startLeveeService runs Levee as docs/swarm.md's stack does: a service
// placed on a manager, the engine's socket mounted, its ports published in
// host mode (here on free ports of this host).
func (e *swarmEnv) startLeveeService(image string) {
	t := e.t
	proxyPort, apiPort := uint32(freePort(t)), uint32(freePort(t))
	spec := swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: "levee-i15-levee-" + e.runID},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{
				Image: image, Args: e.leveeArgs(), Labels: map[string]string{dockertest.Label: e.runID},
				Mounts: []mount.Mount{{Type: mount.TypeBind, Source: "/var/run/docker.sock", Target: "/var/run/docker.sock", ReadOnly: true}},
			},
			Networks:  []swarm.NetworkAttachmentConfig{{Target: e.netID}},
			Placement: &swarm.Placement{Constraints: []string{"node.role == manager"}},
		},
		EndpointSpec: &swarm.EndpointSpec{Ports: []swarm.PortConfig{
			{Protocol: network.TCP, TargetPort: 8080, PublishedPort: proxyPort, PublishMode: swarm.PortConfigPublishModeHost},
			{Protocol: network.TCP, TargetPort: 3035, PublishedPort: apiPort, PublishMode: swarm.PortConfigPublishModeHost},
		}},
	}
	id := e.createService(spec)
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", "com.docker.swarm.service.id="+id)})
		if err != nil {
			t.Logf("levee service containers: %v", err)
		}
		for _, c := range cs.Items {
			e.dumpLogs(c.ID)
		}
	})
	e.proxy = fmt.Sprintf("127.0.0.1:%d", proxyPort)
	e.apiAddr = fmt.Sprintf("127.0.0.1:%d", apiPort)
}

// startLevee runs Levee as a container with the engine's socket, on the
// default bridge (for the test) and the overlay network (for the tasks).
func (e *swarmEnv) startLevee(ctx context.Context, image string) {
	t := e.t
	name := "levee-i15-levee-" + e.runID
	cfg := &container.Config{Image: image, Labels: map[string]string{dockertest.Label: e.runID}, Cmd: e.leveeArgs()}
	host := &container.HostConfig{Binds: []string{"/var/run/docker.sock:/var/run/docker.sock"}}
	resp, err := e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host,
		NetworkingConfig: &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{"bridge": {}}}, Name: name})
	if err != nil {
		t.Fatalf("create the Levee container: %v", err)
	}
	// Cleanups run last first: the logs are read, then the container
	// goes, so that the network can go after it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := e.cli.ContainerRemove(ctx, resp.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
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
	ip := dockertest.IPs(t, e.cli, resp.ID)["bridge"]
	e.proxy, e.apiAddr = ip+":8080", ip+":3035"
}

func (e *swarmEnv) dumpLogs(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
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
func (e *swarmEnv) api(path string, v any) error { return swarmAPI(e.apiAddr, path, v) }

// swarmAPI GETs path from the API of the Levee at apiAddr (token swarmToken)
// into v.
func swarmAPI(apiAddr, path string, v any) error {
	req, _ := http.NewRequest(http.MethodGet, "http://"+apiAddr+path, nil)
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
	bs, err := backendsAt(e.apiAddr, id)
	var out []string
	for _, b := range bs {
		out = append(out, b.Address)
	}
	sort.Strings(out)
	return out, err
}

// swarmBackend is one backend as Levee's API shows it.
type swarmBackend struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
}

// backendsAt returns the backends of entrypoint id in the Levee at apiAddr.
func backendsAt(apiAddr, id string) ([]swarmBackend, error) {
	var v struct {
		Entrypoint struct {
			Backends []swarmBackend `json:"backends"`
		} `json:"entrypoint"`
	}
	if err := swarmAPI(apiAddr, "/entrypoints/"+id, &v); err != nil {
		return nil, err
	}
	return v.Entrypoint.Backends, nil
}

// get sends one request for host through Levee and returns the answering
// echo's host name (its container ID).
func (e *swarmEnv) get(host string) (string, error) { return getVia(e.proxy, host) }

// getVia is get through the Levee proxy listening at proxy.
func getVia(proxy, host string) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+proxy+"/", nil)
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
	return e.createService(e.serviceSpec(suffix, replicas, labels))
}

// serviceSpec is the spec of the echo service that service creates.
func (e *swarmEnv) serviceSpec(suffix string, replicas uint64, labels map[string]string) swarm.ServiceSpec {
	name := "levee-i15-" + suffix + "-" + e.runID
	delay := 100 * time.Millisecond
	// The run's label on the service too: the test's Levee routes only
	// the run's services (dockertest.Constraint).
	labels[dockertest.Label] = e.runID
	return swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: name, Labels: labels},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{Image: e.echo, Labels: map[string]string{dockertest.Label: e.runID}},
			Networks:      []swarm.NetworkAttachmentConfig{{Target: e.netID}},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionAny, Delay: &delay},
		},
		Mode: swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &replicas}},
	}
}

// createService creates a service, removed when the test ends (waiting
// until its task containers are gone, so that the network can go).
func (e *swarmEnv) createService(spec swarm.ServiceSpec) string {
	t := e.t
	name := spec.Name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := e.cli.ServiceCreate(ctx, client.ServiceCreateOptions{Spec: spec})
	if err != nil {
		t.Fatalf("create service %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := e.cli.ServiceRemove(ctx, resp.ID, client.ServiceRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Errorf("remove service %s: %v", name, err)
			return
		}
		// Its tasks leave the network asynchronously; the network can go
		// once they have.
		err := dockertest.Poll(time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
				Filters: make(client.Filters).Add("label", "com.docker.swarm.service.id="+resp.ID)})
			if err == nil && len(cs.Items) > 0 {
				err = fmt.Errorf("%d task containers left", len(cs.Items))
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
	in, err := e.cli.ServiceInspect(ctx, id, client.ServiceInspectOptions{})
	if err != nil {
		e.t.Fatalf("inspect service %s: %v", id, err)
	}
	s := in.Service
	s.Spec.Mode.Replicated.Replicas = &replicas
	if _, err := e.cli.ServiceUpdate(ctx, id, client.ServiceUpdateOptions{Version: s.Version, Spec: s.Spec}); err != nil {
		e.t.Fatalf("scale service %s to %d: %v", id, replicas, err)
	}
}

// running returns the tasks of service id that run, by task ID.
func (e *swarmEnv) running(id string) (map[string]swarm.Task, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, err := e.cli.TaskList(ctx, client.TaskListOptions{Filters: make(client.Filters).Add("service", id)})
	if err != nil {
		return nil, err
	}
	out := map[string]swarm.Task{}
	for _, tk := range ts.Items {
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
				out = append(out, a.Addresses[0].Addr().String())
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

// reachTasks calls get (a request through Levee, answering the echo
// backend's host name) until n different tasks have answered, within 30 s:
// a task the swarm reports running may refuse the first connection while
// its endpoint comes up, and Levee then retries on another task and ejects
// that one for the first ejection time (10 s), as it should (seen in CI:
// only one of two within 10 s on a loaded host).
func reachTasks(t *testing.T, get func() (string, error), n int) {
	t.Helper()
	seen := map[string]bool{}
	dockertest.Eventually(t, 30*time.Second, func() error {
		h, err := get()
		if err != nil {
			return err
		}
		seen[h] = true
		if len(seen) < n {
			return fmt.Errorf("reached %v, want %d tasks", seen, n)
		}
		return nil
	})
}

// waitSwarmDiagnostic polls the API of the Levee at apiAddr, within 20 s,
// until the Swarm service named object carries a diagnostic code on key.
func waitSwarmDiagnostic(t *testing.T, apiAddr, object, code, key string) {
	t.Helper()
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
		if err := swarmAPI(apiAddr, "/diagnostics", &report); err != nil {
			return err
		}
		for _, o := range report.Objects {
			for _, d := range o.Diagnostics {
				if o.Provider == "swarm" && o.Object == object && d.Code == code && d.Key == key {
					return nil
				}
			}
		}
		return fmt.Errorf("no %s on %s of swarm service %s: %+v", code, key, object, report.Objects)
	})
}
