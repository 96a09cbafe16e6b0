package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// `levee validate` against two real engines, with serve's host flags, the
// second over TLS: replicas of one route on both hosts are one route (the
// second host's at its address and published port), each row names
// host/container, and a container of the second host that publishes
// nothing is skipped with W087 naming its host: exit 1. With a client
// certificate of another CA the second host cannot be read: exit 2,
// naming it.
func TestValidateSeveralDockerHosts(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	server, good := dockertest.EngineCerts(t, t.TempDir())
	_, bad := dockertest.EngineCerts(t, t.TempDir())
	edge2 := dockertest.SecondEngineWith(t, dockertest.EngineOptions{TLSDir: server})
	image2 := dockertest.EchoImage(t, edge2.Client)
	run := dockertest.RunID(t)
	shared := "app-" + run + ".test"

	dockertest.Run(t, cli, echoSpec(image, network, "blue", shared, nil))
	green := dockertest.Run(t, edge2.Client, dockertest.Spec{Image: image2, Env: []string{"ECHO_NAME=green"}, Publish: []int{dockertest.EchoPort},
		Labels: map[string]string{"levee.enable": "true", "levee.http.app.host": shared}})
	dockertest.Run(t, edge2.Client, dockertest.Spec{Image: image2, Env: []string{"ECHO_NAME=lonely"},
		Labels: map[string]string{"levee.enable": "true", "levee.http.lonely.host": "lonely-" + run + ".test"}})
	published := dockertest.PublishedPort(t, edge2.Client, green, dockertest.EchoPort)

	args := func(certs string) []string {
		return []string{"validate", "--format", "json", "--docker-constraints", dockertest.Constraint(run),
			"--docker-host", "local=" + cli.DaemonHost(), "--docker-host", "edge2=" + edge2.TCP, "--docker-tls-dir", "edge2=" + certs}
	}
	wrong, err := exec.Command(leveeBinary, args(bad)...).CombinedOutput()
	var refused *exec.ExitError
	if !errors.As(err, &refused) || refused.ExitCode() != 2 || !strings.Contains(string(wrong), "read Docker host edge2") {
		t.Errorf("validate with the wrong certificate: %v, want exit 2 naming edge2\n%s", err, wrong)
	}
	out, err := exec.Command(leveeBinary, args(good)...).Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("levee validate: %v (want exit 1: lonely is skipped)\n%s", err, out)
	}
	var rep struct {
		Services []struct {
			Container, Service, Entrypoint, Status, Backend string
			Diagnostics                                     []struct{ Code, Message string }
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	var app []string
	entrypoints := map[string]bool{}
	lonely := false
	for _, r := range rep.Services {
		switch r.Service {
		case "app":
			// degraded: the run's own levee.test label is W013.
			if r.Status != "routed" && r.Status != "degraded" {
				t.Errorf("app row %+v, want routed", r)
			}
			app = append(app, r.Container)
			entrypoints[r.Entrypoint] = true
			if strings.HasPrefix(r.Container, "edge2/") && !strings.HasSuffix(r.Backend, ":"+strconv.Itoa(published)) {
				t.Errorf("edge2's replica is dialled at %s, want its published port %d", r.Backend, published)
			}
		case "lonely":
			for _, d := range r.Diagnostics {
				if d.Code == "W087" && strings.Contains(d.Message, "Docker host edge2") {
					lonely = strings.HasPrefix(r.Container, "edge2/") && r.Status == "skipped"
				}
			}
		}
	}
	hosts := map[string]bool{}
	for _, c := range app {
		h, _, _ := strings.Cut(c, "/")
		hosts[h] = true
	}
	if len(app) != 2 || len(entrypoints) != 1 || !hosts["local"] || !hosts["edge2"] {
		t.Errorf("app rows %v in entrypoints %v: want one route of local/… and edge2/…\n%s", app, entrypoints, out)
	}
	if !lonely {
		t.Errorf("no skipped edge2/… lonely row with W087 naming edge2:\n%s", out)
	}
}
