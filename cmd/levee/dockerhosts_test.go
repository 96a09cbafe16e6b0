package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/e2e/dockertest"
	"github.com/levee-proxy/levee/provider/docker"
)

func TestDockerHostFlags(t *testing.T) {
	noEnv := envOf(map[string]string{})
	cfg, err := parseServeFlags([]string{"--docker-host", "unix:///var/run/docker.sock", "--docker-host", "edge2=tcp://10.0.0.2:2376"}, noEnv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := []docker.HostSpec{{Name: "local", URL: "unix:///var/run/docker.sock"}, {Name: "edge2", URL: "tcp://10.0.0.2:2376"}}
	if len(cfg.DockerHosts) != 2 || cfg.DockerHosts[0] != want[0] || cfg.DockerHosts[1] != want[1] {
		t.Errorf("DockerHosts = %+v, want %+v", cfg.DockerHosts, want)
	}

	// One unnamed host is the single-engine provider, as before.
	cfg, err = parseServeFlags([]string{"--docker-host", "tcp://10.0.0.2:2375"}, noEnv, &bytes.Buffer{})
	if err != nil || cfg.DockerHost != "tcp://10.0.0.2:2375" || cfg.DockerHosts != nil {
		t.Errorf("one host: DockerHost %q, DockerHosts %+v, %v", cfg.DockerHost, cfg.DockerHosts, err)
	}

	// LEVEE_DOCKER_HOST takes several, comma-separated.
	cfg, err = parseServeFlags(nil, envOf(map[string]string{"LEVEE_DOCKER_HOST": "a=unix:///a.sock, b=tcp://10.0.0.3:2375"}), &bytes.Buffer{})
	if err != nil || len(cfg.DockerHosts) != 2 || cfg.DockerHosts[1].Name != "b" {
		t.Errorf("LEVEE_DOCKER_HOST: %+v, %v", cfg.DockerHosts, err)
	}

	dir := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err = parseServeFlags([]string{"--docker-host", "a=unix:///a.sock", "--docker-host", "b=tcp://10.0.0.3:2376", "--docker-tls-dir", "b=" + dir}, noEnv, &bytes.Buffer{})
	if err != nil || cfg.DockerHosts[1].TLSDir != dir || cfg.DockerHosts[0].TLSDir != "" {
		t.Errorf("--docker-tls-dir: %+v, %v", cfg.DockerHosts, err)
	}

	cfg, err = parseServeFlags([]string{"--docker-host", "edge2=unix:///run/edge2.sock", "--docker-host-address", "edge2=10.0.0.2"}, noEnv, &bytes.Buffer{})
	if err != nil || len(cfg.DockerHosts) != 1 || cfg.DockerHosts[0].Addr != "10.0.0.2" {
		t.Errorf("--docker-host-address: %+v, %v", cfg.DockerHosts, err)
	}

	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-host", "a=unix:///b.sock"}, "given twice"},
		{[]string{"--docker-host", "unix:///a.sock", "--docker-host", "unix:///b.sock"}, "given twice"},
		{[]string{"--docker-host", "a=ssh://"}, "ssh:// needs a host"},
		{[]string{"--docker-host", "a=tcp//10.0.0.2"}, "no scheme"},
		{[]string{"--docker-host", "A=tcp://10.0.0.2:2375"}, "lower-case"},
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-tls-dir", "b=" + dir}, "no --docker-host names"},
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-tls-dir", "a=" + t.TempDir()}, "ca.pem"},
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-host-address", "b=10.0.0.2"}, "--docker-host-address names host b"},
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-host-address", "a=10.0.0.2:22"}, "without a port"},
		{[]string{"--swarm", "--docker-host", "a=unix:///a.sock", "--docker-host", "b=unix:///b.sock"}, "--swarm watches one"},
	} {
		_, err := parseServeFlags(tc.args, noEnv, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.err)
		}
	}
}

// Several hosts: one /ready entry and one series per host, and the file
// provider's series registered beside them with host="".
func TestBuildWatchesSeveralDockerHosts(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--docker-host", "a=tcp://127.0.0.1:1", "--docker-host", "b=tcp://127.0.0.1:2",
		"--config-dir", t.TempDir(), "--state-file", filepath.Join(t.TempDir(), "state.json")}, envOf(map[string]string{}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := build(ctx, cfg, zerolog.Nop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, background := range a.background {
		wg.Add(1)
		go func() { defer wg.Done(); background(ctx) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	dockertest.Eventually(t, 10*time.Second, func() error {
		rec := httptest.NewRecorder()
		a.api.ServeHTTP(rec, apiRequest("/ready"))
		// Both hosts are unreachable: judged lost, they hold nothing back.
		if rec.Code != http.StatusOK {
			return fmt.Errorf("/ready = %d %s, want 200 once both hosts failed an attempt", rec.Code, rec.Body)
		}
		for _, want := range []string{`"name":"docker/a"`, `"name":"docker/b"`} {
			if !strings.Contains(rec.Body.String(), want) {
				return fmt.Errorf("/ready = %s, want %s", rec.Body, want)
			}
		}
		rec = httptest.NewRecorder()
		a.api.ServeHTTP(rec, apiRequest("/metrics"))
		for _, want := range []string{`levee_provider_connected{host="a",provider="docker"} 0`, `levee_provider_connected{host="b",provider="docker"} 0`,
			`levee_provider_connected{host="",provider="file"} 1`, `levee_provider_reconnects_total{host="b",provider="docker"}`} {
			if !strings.Contains(rec.Body.String(), want) {
				return fmt.Errorf("/metrics lacks %s", want)
			}
		}
		return nil
	})
}

// --docker-host-weight sets a host's weight; a bad value, a weight given
// twice or one naming no host stops serve with a message naming it.
func TestDockerHostWeightFlag(t *testing.T) {
	noEnv := envOf(map[string]string{})
	two := []string{"--docker-host", "a=unix:///a.sock", "--docker-host", "b=tcp://10.0.0.3:2376"}
	cfg, err := parseServeFlags(append(two, "--docker-host-weight", "b=3"), noEnv, &bytes.Buffer{})
	if err != nil || cfg.DockerHosts[1].Weight != 3 || cfg.DockerHosts[0].Weight != 0 {
		t.Fatalf("--docker-host-weight b=3: %+v, %v", cfg.DockerHosts, err)
	}
	cfg, err = parseServeFlags(two, envOf(map[string]string{"LEVEE_DOCKER_HOST_WEIGHT": "a=2,b=5"}), &bytes.Buffer{})
	if err != nil || cfg.DockerHosts[0].Weight != 2 || cfg.DockerHosts[1].Weight != 5 {
		t.Errorf("LEVEE_DOCKER_HOST_WEIGHT: %+v, %v", cfg.DockerHosts, err)
	}
	for _, c := range []struct{ value, want string }{
		{"b=0", `"b=0"`}, {"b=x", `"b=x"`}, {"b=101", "from 1 to 100"}, {"3", `"3"`},
		{"c=2", "names host c"}, {"b=2,b=3", "given twice"},
	} {
		_, err := parseServeFlags(append(two, "--docker-host-weight", c.value), noEnv, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--docker-host-weight %s: %v, want an error containing %s", c.value, err, c.want)
		}
	}
}
