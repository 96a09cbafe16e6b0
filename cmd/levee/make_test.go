package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// makeAt runs make with args in the repository root and returns its
// combined output and error.
func makeAt(t *testing.T, args ...string) (string, error) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", append([]string{"-s"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// envFile reads a KEY=value file into a map.
func envFile(t *testing.T, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		m[k] = v
	}
	return m
}

// fakeSocket is a file standing for the Docker socket, and its group id.
func fakeSocket(t *testing.T) (string, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "docker.sock")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, strconv.FormatUint(uint64(st.Sys().(*syscall.Stat_t).Gid), 10)
}

// make demo-env writes a private .env with an API token that Levee accepts
// and the Docker socket's group (the non-root levee container joins it),
// and never replaces a setting that is already there.
func TestMakeDemoEnv(t *testing.T) {
	sock, gid := fakeSocket(t)
	path := filepath.Join(t.TempDir(), ".env")
	if out, err := makeAt(t, "demo-env", "DEMO_ENV="+path, "DOCKER_SOCK="+sock); err != nil {
		t.Fatalf("make demo-env: %v\n%s", err, out)
	}
	first := envFile(t, path)
	if err := checkToken(first["LEVEE_API_TOKEN"]); err != nil || first["LEVEE_API_TOKEN"] == "" {
		t.Errorf("generated LEVEE_API_TOKEN %q: %v", first["LEVEE_API_TOKEN"], err)
	}
	if first["DOCKER_GID"] != gid {
		t.Errorf("DOCKER_GID = %q, want %s, the group of %s", first["DOCKER_GID"], gid, sock)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v (%v), want 0600", path, st.Mode(), err)
	}
	other, _ := fakeSocket(t)
	if out, err := makeAt(t, "demo-env", "DEMO_ENV="+path, "DOCKER_SOCK="+other+".missing"); err != nil {
		t.Fatalf("make demo-env again: %v\n%s", err, out)
	}
	if again := envFile(t, path); again["LEVEE_API_TOKEN"] != first["LEVEE_API_TOKEN"] || again["DOCKER_GID"] != gid || len(again) != 2 {
		t.Errorf("a second make demo-env changed the file: %v, was %v", again, first)
	}

	// A user's own file (no final newline) keeps its lines and gains the
	// missing setting on a line of its own.
	own := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(own, []byte("LEVEE_HTTP_PORT=8081"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := makeAt(t, "demo-env", "DEMO_ENV="+own, "DOCKER_SOCK="+sock); err != nil {
		t.Fatalf("make demo-env: %v\n%s", err, out)
	}
	if got := envFile(t, own); got["LEVEE_HTTP_PORT"] != "8081" || checkToken(got["LEVEE_API_TOKEN"]) != nil ||
		got["LEVEE_API_TOKEN"] == "" || got["DOCKER_GID"] != gid {
		t.Errorf("make demo-env on an existing file: %v", got)
	}

	// No socket to read the group from: a failure that says what to do.
	bare := filepath.Join(t.TempDir(), ".env")
	out, err := makeAt(t, "demo-env", "DEMO_ENV="+bare, "DOCKER_SOCK="+sock+".missing")
	if err == nil || !strings.Contains(out, "set DOCKER_GID in "+bare) {
		t.Errorf("make demo-env without a socket: %v\n%s", err, out)
	}
}
