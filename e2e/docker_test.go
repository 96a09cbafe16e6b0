package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// routedBy asks Levee for host and returns the answering echo replica's
// ECHO_NAME (from its body) or an error describing what came back instead.
func routedBy(p *leveeProc, host string) (string, error) {
	return routedWithin(p, host, 5*time.Second)
}

// routedWithin is routedBy with a per-request timeout. A request that Levee
// sent to a container just before it stopped waits for the dial timeout;
// polls that measure how fast traffic moves must not wait for it.
func routedWithin(p *leveeProc, host string, timeout time.Duration) (string, error) {
	req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
	req.Host = host
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d, diagnostic %q", resp.StatusCode, resp.Header.Get("X-Levee-Diagnostic"))
	}
	var reply struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || reply.Name == "" {
		return "", fmt.Errorf("echo reply without a name (%v)", err)
	}
	return reply.Name, nil
}

func echoSpec(image, network, name, host string, extra map[string]string) dockertest.Spec {
	labels := map[string]string{
		"levee.enable":        "true",
		"levee.http.app.host": host,
	}
	for k, v := range extra {
		labels[k] = v
	}
	return dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=" + name}, Labels: labels}
}

// The Foundation scenario: two labelled replicas share the traffic; when one
// stops, traffic moves to the other within 2 s; when both are gone the route
// answers 503 no-healthy-backend rather than 404.
func TestDockerReplicasThroughLevee(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	host := "app-" + dockertest.RunID(t) + ".test"

	p := startLevee(t, "--route-grace", "1m")
	blue := dockertest.Run(t, cli, echoSpec(image, network, "blue", host, nil))
	green := dockertest.Run(t, cli, echoSpec(image, network, "green", host, nil))

	seen := map[string]bool{}
	dockertest.Eventually(t, 20*time.Second, func() error {
		name, err := routedBy(p, host)
		if err != nil {
			return err
		}
		seen[name] = true
		if !seen["blue"] || !seen["green"] {
			return fmt.Errorf("replicas seen so far: %v", seen)
		}
		return nil
	})

	dockertest.Stop(t, cli, blue)
	stopped := time.Now()
	// Traffic has moved once ten requests in a row land on green.
	streak := 0
	dockertest.Eventually(t, 2*time.Second, func() error {
		name, err := routedWithin(p, host, 300*time.Millisecond)
		if err != nil || name != "green" {
			streak = 0
			return fmt.Errorf("still reaching %q (%v)", name, err)
		}
		if streak++; streak < 10 {
			return fmt.Errorf("only %d in a row on green", streak)
		}
		return nil
	})
	t.Logf("traffic moved to the remaining replica %s after the stop returned", time.Since(stopped))

	dockertest.Remove(t, cli, blue)
	dockertest.Remove(t, cli, green)
	dockertest.Eventually(t, 10*time.Second, func() error {
		status, hdr, _ := get(t, p.proxyURL()+"/", host)
		if status != http.StatusServiceUnavailable || hdr.Get("X-Levee-Diagnostic") != "no-healthy-backend" {
			return fmt.Errorf("got %d %q, want 503 no-healthy-backend", status, hdr.Get("X-Levee-Diagnostic"))
		}
		return nil
	})
}

// A container with a HEALTHCHECK gets traffic only while healthy.
func TestDockerUnhealthyContainerGetsNoTraffic(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	host := "health-" + dockertest.RunID(t) + ".test"

	p := startLevee(t)
	healthySpec := echoSpec(image, network, "healthy", host, nil)
	healthySpec.Healthcheck = dockertest.EchoHealthcheck(500 * time.Millisecond)
	dockertest.Run(t, cli, healthySpec)
	sickSpec := echoSpec(image, network, "sick", host, nil)
	sickSpec.Healthcheck = dockertest.EchoHealthcheck(500 * time.Millisecond)
	sickSpec.Healthcheck.Test = []string{"CMD", "/echo", "-healthcheck", "http://127.0.0.1:1/"}
	sick := dockertest.Run(t, cli, sickSpec)

	dockertest.Eventually(t, 30*time.Second, func() error {
		status, err := dockertest.Health(t.Context(), cli, sick)
		if err != nil || status != "unhealthy" {
			return fmt.Errorf("sick container health %q (%v)", status, err)
		}
		return nil
	})
	// Once the healthy one is up, every request lands on it.
	streak := 0
	dockertest.Eventually(t, 30*time.Second, func() error {
		name, err := routedBy(p, host)
		if err != nil || name != "healthy" {
			streak = 0
			return fmt.Errorf("reached %q (%v)", name, err)
		}
		if streak++; streak < 20 {
			return fmt.Errorf("%d in a row", streak)
		}
		return nil
	})
}

// One bad circuitBreaker.threshold does not stop the service from being
// routed: the default applies and W024 names the container, key and value.
// Another run's container with the same mistake (a `make demo` left up,
// another test) runs on the engine first: the test's Levee, kept to its
// own run's containers, neither routes it nor reports its W024.
func TestDockerBadBreakerLabelIsRoutedWithW024(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	run := dockertest.RunID(t)
	host := "w024-" + run + ".test"
	bad := map[string]string{"levee.http.app.circuitBreaker.threshold": "lots"}

	foreign := echoSpec(image, network, "foreign", "foreign-"+host, bad)
	foreign.Name = "levee-w024-foreign-" + run
	foreign.Labels[dockertest.Label] = run + "-another-run"
	foreignID := dockertest.Run(t, cli, foreign)
	t.Cleanup(func() { dockertest.Remove(t, cli, foreignID) }) // not the run's: its cleanup would miss it

	p := startLevee(t)
	spec := echoSpec(image, network, "solo", host, bad)
	spec.Name = "levee-w024-own-" + run
	dockertest.Run(t, cli, spec)
	dockertest.Eventually(t, 20*time.Second, func() error {
		_, err := routedBy(p, host)
		return err
	})
	line := p.waitLog(10*time.Second, func(l map[string]any) bool {
		return l["code"] == "W024" && l["value"] == "lots" && l["object"] == spec.Name
	})
	if line["key"] != "levee.http.app.circuitBreaker.threshold" || line["level"] != "warn" ||
		!strings.Contains(fmt.Sprint(line["fallback"]), "0.5") {
		t.Fatalf("W024 log line lacks key/level/fallback: %v", line)
	}
	for _, l := range p.logs() {
		if strings.Contains(fmt.Sprint(l), foreign.Name) {
			t.Errorf("the test's Levee reported another run's container: %v", l)
		}
	}
	if _, err := routedBy(p, "foreign-"+host); err == nil {
		t.Errorf("another run's container is routed")
	}
}
