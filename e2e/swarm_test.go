package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// The scenario on the real engine: a labelled service with two
// replicas on an attachable overlay, Levee in a container on it; both tasks
// are reached; scaling to 3 and to 1 shows within a second; a killed task
// is removed and its replacement added; a bad deploy.labels value gives a
// diagnostic naming the service; lb.swarm=true routes through the VIP; a
// Levee process on the host reaches tasks through their host-mode ports.
func TestSwarmServiceThroughLevee(t *testing.T) {
	e := newSwarmEnv(t, false)
	const host = "swarm.i15.test"
	web := e.service("web", 2, map[string]string{
		"levee.enable": "true", "levee.http.web.host": host, "levee.http.web.port": "8080",
	})
	const ep = "web@swarm"

	t.Run("both tasks reached", func(t *testing.T) {
		e.converge(web, ep, 2, 90*time.Second)
		reachTasks(t, func() (string, error) { return e.get(host) }, 2)
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
			cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{Filters: make(client.Filters).Add("label", "com.docker.swarm.service.id="+web)})
			if err == nil && len(cs.Items) != 1 {
				err = fmt.Errorf("%d task containers running", len(cs.Items))
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
		if _, err := e.cli.ContainerKill(ctx, victim.Status.ContainerStatus.ContainerID, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
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
		waitSwarmDiagnostic(t, e.apiAddr, name, "W001", "levee.http.bad.port")
		// `levee validate` with no file reads the live engine: on a
		// manager, the services too, with the same diagnostic.
		out, err := exec.Command(leveeBinary, "validate", "--format", "json").Output()
		var rep struct {
			Services []struct {
				Provider    string `json:"provider"`
				Container   string `json:"container"`
				Diagnostics []struct {
					Code string `json:"code"`
				} `json:"diagnostics"`
			} `json:"services"`
		}
		if jerr := json.Unmarshal(out, &rep); jerr != nil {
			t.Fatalf("levee validate: %v, %v\n%s", err, jerr, out)
		}
		found := false
		for _, r := range rep.Services {
			for _, d := range r.Diagnostics {
				found = found || r.Provider == "swarm" && r.Container == name && d.Code == "W001"
			}
		}
		if !found {
			t.Errorf("levee validate on the live engine does not report W001 for swarm service %s:\n%s", name, out)
		}
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
			in, err := e.cli.ServiceInspect(ctx, vip, client.ServiceInspectOptions{})
			if err != nil {
				return err
			}
			s := in.Service
			for _, v := range s.Endpoint.VirtualIPs {
				if v.NetworkID == e.netID {
					addr = v.Addr.Addr().String()
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

	t.Run("Levee on the host: host-mode ports", func(t *testing.T) { hostModePorts(t, e) })
}

// Levee deployed as docs/swarm.md's stack deploys it: a Swarm service on a
// manager with the socket mounted and host-mode ports. It finds its own
// task's networks and reaches the labelled service's tasks.
func TestSwarmLeveeAsAService(t *testing.T) {
	e := newSwarmEnv(t, true)
	const host = "svc.i15.test"
	web := e.service("web", 2, map[string]string{
		"levee.enable": "true", "levee.http.web.host": host, "levee.http.web.port": "8080",
	})
	e.converge(web, "web@swarm", 2, 90*time.Second)
	reachTasks(t, func() (string, error) { return e.get(host) }, 2)
	e.scale(web, 3)
	if lag := e.converge(web, "web@swarm", 3, 60*time.Second); lag > time.Second {
		t.Errorf("scale to 3: Levee followed the swarm after %v, want within 1s", lag)
	}
}

// hostModePorts is the host case: Levee runs as a process on the
// host (no container of its own), where overlay addresses are not
// reachable. A service publishing 8080 in host mode, without a fixed
// published port, is reached through each task's port on its node; a
// service publishing nothing (web, from the test above) gets W073. The
// Levee in a container still dials the same service's tasks on the
// overlay.
func hostModePorts(t *testing.T, e *swarmEnv) {
	// From here on the engine's IPv4 and IPv6 ports of a task differ, as
	// on a host where containers published IPv4-only ports (see
	// TestSwarmHostModeTwoServicesScaledUnderLoad).
	skewPortAllocators(t, e.cli, e.echo, e.runID)
	const host = "hostports.i15.test"
	spec := e.serviceSpec("hostports", 2, map[string]string{
		"levee.enable": "true", "levee.http.hp.host": host, "levee.http.hp.port": "8080",
	})
	spec.EndpointSpec = &swarm.EndpointSpec{Ports: []swarm.PortConfig{
		{Protocol: network.TCP, TargetPort: 8080, PublishMode: swarm.PortConfigPublishModeHost},
	}}
	id := e.createService(spec)
	const ep = "hp@swarm"
	lv := startLevee(t, "--docker=false", "--swarm", "--api-token", swarmToken, "--docker-constraints", dockertest.Constraint(e.runID))

	// The engine picks each task's published port, one per address
	// family; Levee's backends are exactly the IPv4 ones (the node's
	// address is 127.0.0.1), read from the task containers.
	var published []int
	var bs []swarmBackend
	dockertest.Eventually(t, 90*time.Second, func() error {
		var err error
		published, err = taskIPv4Ports(e.cli, id, 8080)
		if err != nil {
			return err
		}
		if len(published) != 2 || published[0] == 0 {
			return fmt.Errorf("host-mode ports of the running tasks: %v, want 2", published)
		}
		bs, err = backendsAt(lv.APIAddr, ep)
		if err != nil {
			return err
		}
		var ports []int
		for _, b := range bs {
			if b.Address == "" {
				return fmt.Errorf("backend without a node address: %+v", bs)
			}
			ports = append(ports, b.Port)
		}
		slices.Sort(ports)
		if !slices.Equal(ports, published) {
			return fmt.Errorf("host Levee's backends %+v, tasks publish %v", bs, published)
		}
		return nil
	})
	t.Logf("tasks publish 8080 on %v; the host Levee's backends: %+v", published, bs)

	// Both tasks through the host Levee.
	reachTasks(t, func() (string, error) { return getVia(lv.ProxyAddr, host) }, 2)

	// web publishes no port: the host Levee says its tasks are out of
	// reach, keyed by the route's port.
	web := "levee-i15-web-" + e.runID
	waitSwarmDiagnostic(t, lv.APIAddr, web, "W073", "levee.http.web.port")

	// In a container, nothing changes: the tasks' overlay addresses.
	e.converge(id, ep, 2, 60*time.Second)
}
