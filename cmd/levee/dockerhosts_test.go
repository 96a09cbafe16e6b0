package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-host", "a=unix:///b.sock"}, "given twice"},
		{[]string{"--docker-host", "unix:///a.sock", "--docker-host", "unix:///b.sock"}, "given twice"},
		{[]string{"--docker-host", "a=ssh://me@edge"}, "ssh:// is not supported"},
		{[]string{"--docker-host", "a=tcp//10.0.0.2"}, "no scheme"},
		{[]string{"--docker-host", "A=tcp://10.0.0.2:2375"}, "lower-case"},
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-tls-dir", "b=" + dir}, "no --docker-host names"},
		{[]string{"--docker-host", "a=unix:///a.sock", "--docker-tls-dir", "a=" + t.TempDir()}, "ca.pem"},
		{[]string{"--swarm", "--docker-host", "a=unix:///a.sock", "--docker-host", "b=unix:///b.sock"}, "--swarm watches one"},
	} {
		_, err := parseServeFlags(tc.args, noEnv, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.err)
		}
	}
}
