package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// Two services publish 8080 in host mode side by side, with a Levee
// process on the host, and are scaled under load: every answer comes from
// a task of the service asked for, and every answer is a 200. Before the
// services start, a container publishes a port on 0.0.0.0 only: the
// engine allocates a host-mode task's 0.0.0.0 and [::] ports
// independently, so from then on a task's two numbers differ (as they do
// whenever other containers have published IPv4-only ports), and the
// lower, IPv6, number of one task is the IPv4 port of the task created
// before it.
func TestSwarmHostModeTwoServicesScaledUnderLoad(t *testing.T) {
	cli := dockertest.Require(t)
	runID := dockertest.RunID(t)
	echo := dockertest.EchoImage(t, cli)
	requireSwarm(t, cli)
	skewPortAllocators(t, cli, echo, runID)

	type svc struct {
		name, host, id, ep string
	}
	svcs := []*svc{{name: "alpha"}, {name: "beta"}}
	for _, s := range svcs {
		s.host = s.name + ".hostmode.test"
		s.ep = s.name + "@swarm"
		spec := hostModeSpec("levee-hm-"+s.name+"-"+runID, echo, runID, 2, map[string]string{
			"levee.enable": "true", "levee.http." + s.name + ".host": s.host, "levee.http." + s.name + ".port": "8080",
			dockertest.Label: runID,
		}, "ECHO_NAME="+s.name)
		s.id = createSwarmService(t, cli, spec)
	}
	lv := startLevee(t, "--docker=false", "--swarm", "--api-token", swarmToken)

	// converge waits until each service runs want tasks and the host
	// Levee's backends are exactly their IPv4 host ports.
	converge := func(want map[*svc]int) {
		t.Helper()
		dockertest.Eventually(t, 90*time.Second, func() error {
			for s, n := range want {
				ports, err := taskIPv4Ports(cli, s.id, 8080)
				if err != nil {
					return err
				}
				if len(ports) != n {
					return fmt.Errorf("%s runs %d tasks with a host port (%v), want %d", s.name, len(ports), ports, n)
				}
				bs, err := backendsAt(lv.APIAddr, s.ep)
				if err != nil {
					return err
				}
				var got []int
				for _, b := range bs {
					got = append(got, b.Port)
				}
				slices.Sort(got)
				if !slices.Equal(got, ports) {
					return fmt.Errorf("%s: Levee's backends %+v, the tasks' IPv4 host ports %v", s.name, bs, ports)
				}
			}
			return nil
		})
	}
	converge(map[*svc]int{svcs[0]: 2, svcs[1]: 2})
	logBindings(t, cli, runID)

	// Bounded load on loopback: two workers per service, each at most one
	// request per 5 ms.
	type tally struct {
		ok, wrong, bad int
		samples        []string
	}
	var mu sync.Mutex
	tallies := map[string]*tally{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range svcs {
		tallies[s.name] = &tally{}
		for w := 0; w < 2; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				hc := &http.Client{Timeout: 5 * time.Second}
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					name, status, err := echoName(hc, lv.ProxyAddr, s.host)
					mu.Lock()
					tl := tallies[s.name]
					switch {
					case err != nil || status != http.StatusOK:
						tl.bad++
						if len(tl.samples) < 5 {
							tl.samples = append(tl.samples, fmt.Sprintf("status %d, %v", status, err))
						}
					case name != s.name:
						tl.wrong++
						if len(tl.samples) < 5 {
							tl.samples = append(tl.samples, "answered by "+name)
						}
					default:
						tl.ok++
					}
					mu.Unlock()
				}
			}()
		}
	}
	scaleSwarmService(t, cli, svcs[0].id, 4)
	scaleSwarmService(t, cli, svcs[1].id, 3)
	converge(map[*svc]int{svcs[0]: 4, svcs[1]: 3})
	logBindings(t, cli, runID)
	scaleSwarmService(t, cli, svcs[0].id, 1)
	scaleSwarmService(t, cli, svcs[1].id, 1)
	converge(map[*svc]int{svcs[0]: 1, svcs[1]: 1})
	// Keep the load on until the stopped tasks' containers are gone.
	dockertest.Eventually(t, 60*time.Second, func() error {
		for _, s := range svcs {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			cs, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", "com.docker.swarm.service.id="+s.id)})
			cancel()
			if err != nil {
				return err
			}
			if len(cs.Items) != 1 {
				return fmt.Errorf("%s: %d task containers running", s.name, len(cs.Items))
			}
		}
		return nil
	})
	close(stop)
	wg.Wait()
	for _, s := range svcs {
		tl := tallies[s.name]
		t.Logf("%s under scaling: %d answered by %s, %d by another service, %d not 200 %v", s.name, tl.ok, s.name, tl.wrong, tl.bad, tl.samples)
		if tl.ok == 0 || tl.wrong > 0 || tl.bad > 0 {
			t.Errorf("%s: %d right answers, %d from another service, %d not 200: %v", s.name, tl.ok, tl.wrong, tl.bad, tl.samples)
		}
	}
}

// skewPortAllocators publishes a port of a plain container on 0.0.0.0
// only, so that the engine's next IPv4 and IPv6 ephemeral ports differ.
func skewPortAllocators(t *testing.T, cli *client.Client, image, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config:     &container.Config{Image: image, Labels: map[string]string{dockertest.Label: runID}},
		HostConfig: &container.HostConfig{PortBindings: network.PortMap{network.MustParsePort("8080/tcp"): {{HostIP: netip.IPv4Unspecified()}}}},
		Name:       "levee-hm-skew-" + runID,
	})
	if err != nil {
		t.Fatalf("create the IPv4-only publisher: %v", err)
	}
	dockertest.Start(t, cli, resp.ID)
}

// hostModeSpec is a replicated echo service that publishes 8080 in host
// mode on a port the engine picks, on no network of its own.
func hostModeSpec(name, image, runID string, replicas uint64, labels map[string]string, env ...string) swarm.ServiceSpec {
	delay := 100 * time.Millisecond
	return swarm.ServiceSpec{
		Annotations: swarm.Annotations{Name: name, Labels: labels},
		TaskTemplate: swarm.TaskSpec{
			ContainerSpec: &swarm.ContainerSpec{Image: image, Env: env, Labels: map[string]string{dockertest.Label: runID}},
			RestartPolicy: &swarm.RestartPolicy{Condition: swarm.RestartPolicyConditionAny, Delay: &delay},
		},
		Mode: swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &replicas}},
		EndpointSpec: &swarm.EndpointSpec{Ports: []swarm.PortConfig{
			{Protocol: network.TCP, TargetPort: 8080, PublishMode: swarm.PortConfigPublishModeHost},
		}},
	}
}

// createSwarmService creates a service, removed (and its task containers
// awaited) when the test ends.
func createSwarmService(t *testing.T, cli *client.Client, spec swarm.ServiceSpec) string {
	t.Helper()
	e := &swarmEnv{t: t, cli: cli}
	return e.createService(spec)
}

// scaleSwarmService sets the replicas of service id.
func scaleSwarmService(t *testing.T, cli *client.Client, id string, replicas uint64) {
	t.Helper()
	e := &swarmEnv{t: t, cli: cli}
	e.scale(id, replicas)
}

// taskIPv4Ports are the host ports on 0.0.0.0 of target of the running
// task containers of service id, sorted: where a connection to the node's
// IPv4 address reaches each task, read from the containers themselves.
func taskIPv4Ports(cli *client.Client, service string, target int) ([]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ts, err := cli.TaskList(ctx, client.TaskListOptions{Filters: make(client.Filters).Add("service", service)})
	if err != nil {
		return nil, err
	}
	var out []int
	for _, tk := range ts.Items {
		if tk.Status.State != swarm.TaskStateRunning || tk.DesiredState != swarm.TaskStateRunning || tk.Status.ContainerStatus == nil {
			continue
		}
		r, err := cli.ContainerInspect(ctx, tk.Status.ContainerStatus.ContainerID, client.ContainerInspectOptions{})
		if err != nil {
			return nil, fmt.Errorf("inspect task %s's container: %w", tk.ID, err)
		}
		for _, b := range r.Container.NetworkSettings.Ports[network.MustParsePort(strconv.Itoa(target)+"/tcp")] {
			if b.HostIP == netip.IPv4Unspecified() {
				n, _ := strconv.Atoi(b.HostPort)
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out, nil
}

// logBindings logs the host port bindings of the run's task containers,
// so that a run shows whether the two families' numbers differed.
func logBindings(t *testing.T, cli *client.Client, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", dockertest.Label+"="+runID)})
	if err != nil {
		t.Logf("list the run's containers: %v", err)
		return
	}
	for _, c := range cs.Items {
		var ps []string
		for _, p := range c.Ports {
			ps = append(ps, fmt.Sprintf("%s:%d->%d", p.IP, p.PublicPort, p.PrivatePort))
		}
		t.Logf("%s: %v", c.Names, ps)
	}
}

// echoName sends one request for host through the Levee proxy at proxy and
// returns the answering echo's ECHO_NAME and the status.
func echoName(hc *http.Client, proxy, host string) (string, int, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+proxy+"/", nil)
	req.Host = host
	resp, err := hc.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", resp.StatusCode, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, fmt.Errorf("diagnostic %q", resp.Header.Get("X-Levee-Diagnostic"))
	}
	var r struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", resp.StatusCode, fmt.Errorf("echo body %q: %w", b, err)
	}
	return r.Name, resp.StatusCode, nil
}
