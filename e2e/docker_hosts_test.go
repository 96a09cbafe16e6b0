package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
	"github.com/moby/moby/api/types/container"
)

// hostsAPI GETs path from Levee's API and returns the body of a 200.
func hostsAPI(p *leveeProc, path string) (string, error) {
	status, _, body, err := tryGet(p.apiURL()+path, "")
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("GET %s: %d %s", path, status, body)
	}
	return body, nil
}

// One Levee, two real engines: replicas of one route on both hosts are
// balanced across them (the remote one through its published port); the
// second engine stopping takes its backend out with W086 while a route of
// the first host keeps answering every request; started again, its
// container comes back.
func TestDockerHostsBalanceAndLoseAHost(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	edge2 := dockertest.SecondEngine(t)
	image2 := dockertest.EchoImage(t, edge2.Client)
	run := dockertest.RunID(t)
	shared, solo := "app-"+run+".test", "solo-"+run+".test"

	dockertest.Run(t, cli, echoSpec(image, network, "blue", shared, nil))
	dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=solo"},
		Labels: map[string]string{"levee.enable": "true", "levee.http.solo.host": solo}})
	green := dockertest.Run(t, edge2.Client, dockertest.Spec{
		Image: image2, Env: []string{"ECHO_NAME=green"}, Publish: []int{dockertest.EchoPort}, Restart: container.RestartPolicyUnlessStopped,
		Labels: map[string]string{"levee.enable": "true", "levee.http.app.host": shared},
	})
	if dockertest.PublishedPort(t, edge2.Client, green, dockertest.EchoPort) == 0 {
		t.Fatal("green publishes no port")
	}

	p := startLevee(t, "--docker-host", "local="+cli.DaemonHost(), "--docker-host", "edge2="+edge2.TCP,
		"--docker-ping-interval", "1s", "--docker-call-timeout", "2s", "--docker-backoff-max", "1s", "--route-grace", "1m")

	seen := func(want ...string) func() error {
		got := map[string]bool{}
		return func() error {
			name, err := routedWithin(p, shared, 2*time.Second)
			if err != nil {
				return err
			}
			got[name] = true
			for _, w := range want {
				if !got[w] {
					return fmt.Errorf("replicas seen so far: %v, want %v", got, want)
				}
			}
			return nil
		}
	}
	dockertest.Eventually(t, 30*time.Second, seen("blue", "green"))

	routes, err := hostsAPI(p, "/entrypoints")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(routes, `"host":"edge2"`) || !strings.Contains(routes, `"host":"local"`) {
		t.Errorf("/entrypoints does not show each backend's host: %s", routes)
	}
	dockertest.Eventually(t, 10*time.Second, func() error {
		metrics, err := hostsAPI(p, "/metrics")
		if err != nil {
			return err
		}
		for _, want := range []string{`levee_provider_connected{host="edge2",provider="docker"} 1`, `levee_provider_connected{host="local",provider="docker"} 1`} {
			if !strings.Contains(metrics, want) {
				return fmt.Errorf("/metrics lacks %s", want)
			}
		}
		ready, err := hostsAPI(p, "/ready")
		if err != nil || !strings.Contains(ready, `"docker/edge2"`) {
			return fmt.Errorf("/ready = %s, %v; want an entry docker/edge2", ready, err)
		}
		return nil
	})

	// The first host's own route answers every request while the second
	// engine goes away.
	stopped := make(chan struct{})
	failures := make(chan string, 1)
	go func() {
		defer close(failures)
		for {
			select {
			case <-stopped:
				return
			default:
			}
			if name, err := routedWithin(p, solo, 5*time.Second); err != nil || name != "solo" {
				failures <- fmt.Sprintf("solo route answered %q, %v", name, err)
				return
			}
		}
	}()
	edge2.Stop(t)
	dockertest.Eventually(t, 30*time.Second, func() error {
		diags, err := hostsAPI(p, "/diagnostics")
		if err != nil {
			return err
		}
		if !strings.Contains(diags, "W086") || !strings.Contains(diags, "edge2") {
			return fmt.Errorf("no W086 for edge2 in /diagnostics")
		}
		return nil
	})
	streak := 0
	dockertest.Eventually(t, 10*time.Second, func() error {
		name, err := routedWithin(p, shared, 2*time.Second)
		if err != nil || name != "blue" {
			streak = 0
			return fmt.Errorf("shared route answered %q, %v; want blue only", name, err)
		}
		if streak++; streak < 10 {
			return fmt.Errorf("only %d in a row on blue", streak)
		}
		return nil
	})
	close(stopped)
	if f, ok := <-failures; ok {
		t.Errorf("while edge2 stopped: %s", f)
	}

	// Back: the engine restarts green (unless-stopped), the host resyncs.
	edge2.Start(t)
	dockertest.Eventually(t, 60*time.Second, seen("blue", "green"))
	dockertest.Eventually(t, 10*time.Second, func() error {
		diags, err := hostsAPI(p, "/diagnostics")
		if err != nil {
			return err
		}
		if strings.Contains(diags, "W086") {
			return fmt.Errorf("W086 still in /diagnostics after edge2 came back")
		}
		return nil
	})
}

// A Docker host over TLS: the right client certificate connects and routes
// the host's container; a certificate of another CA is refused by the
// engine, that host alone is not connected (/ready says why, W086), and
// the first host's routes are served all the same.
func TestDockerHostsTLS(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	server, good := dockertest.EngineCerts(t, t.TempDir())
	_, bad := dockertest.EngineCerts(t, t.TempDir())
	edge2 := dockertest.SecondEngineWith(t, dockertest.EngineOptions{TLSDir: server})
	image2 := dockertest.EchoImage(t, edge2.Client)
	run := dockertest.RunID(t)
	local, remote := "local-"+run+".test", "remote-"+run+".test"
	dockertest.Run(t, cli, echoSpec(image, network, "blue", local, nil))
	dockertest.Run(t, edge2.Client, dockertest.Spec{
		Image: image2, Env: []string{"ECHO_NAME=green"}, Publish: []int{dockertest.EchoPort},
		Labels: map[string]string{"levee.enable": "true", "levee.http.web.host": remote},
	})
	args := func(certs string) []string {
		return []string{"--docker-host", "local=" + cli.DaemonHost(), "--docker-host", "edge2=" + edge2.TCP, "--docker-tls-dir", "edge2=" + certs,
			"--docker-call-timeout", "2s", "--docker-backoff-max", "1s"}
	}

	right := startLevee(t, args(good)...)
	dockertest.Eventually(t, 30*time.Second, func() error {
		name, err := routedBy(right, remote)
		if err != nil || name != "green" {
			return fmt.Errorf("remote route answered %q, %v; want green", name, err)
		}
		return nil
	})

	wrong := startLevee(t, args(bad)...)
	dockertest.Eventually(t, 30*time.Second, func() error {
		if name, err := routedBy(wrong, local); err != nil || name != "blue" {
			return fmt.Errorf("local route answered %q, %v; want blue", name, err)
		}
		_, _, ready, err := tryGet(wrong.apiURL()+"/ready", "")
		if err != nil {
			return err
		}
		var r struct {
			Providers []struct{ Name, State, Error string }
		}
		if err := json.Unmarshal([]byte(ready), &r); err != nil {
			return err
		}
		for _, p := range r.Providers {
			if p.Name == "docker/edge2" {
				if p.State == "connected" || p.Error == "" {
					return fmt.Errorf("edge2 with the wrong certificate: %+v", p)
				}
				diags, err := hostsAPI(wrong, "/diagnostics")
				if err != nil || !strings.Contains(diags, "W086") {
					return fmt.Errorf("no W086 for edge2 (%v)", err)
				}
				t.Logf("edge2 with the wrong certificate: %s: %s", p.State, p.Error)
				return nil
			}
		}
		return fmt.Errorf("/ready has no docker/edge2: %s", ready)
	})
	if status, _, _ := get(t, wrong.proxyURL()+"/", remote); status != http.StatusNotFound {
		t.Errorf("remote route through the refused host: %d, want 404 (never routed)", status)
	}
}
