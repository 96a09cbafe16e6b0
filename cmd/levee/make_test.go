package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
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

// demoServer stands for the demo's proxy: it answers Host: echo.localhost
// with 503 no-healthy-backend for the first `starting` requests, then 200
// (never 200 when starting < 0), and counts the requests. It returns the
// port.
func demoServer(t *testing.T, starting int) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := n.Add(1)
		switch {
		case r.Host != "echo.localhost":
			w.Header().Set("X-Levee-Diagnostic", "no-route")
			w.WriteHeader(http.StatusNotFound)
		case starting < 0 || seen <= int64(starting):
			w.Header().Set("X-Levee-Diagnostic", "no-healthy-backend")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	return strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port), &n
}

// make demo-wait returns once the demo route answers 200, not at the first
// answer: the replicas' 503 no-healthy-backend while they start is waited
// out.
func TestMakeDemoWaitsForTheRoute(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	port, requests := demoServer(t, 2)
	out, err := makeAt(t, "demo-wait", "LEVEE_HTTP_PORT="+port, "DEMO_WAIT=30", "DEMO_POLL=0.05",
		"DEMO_ENV="+filepath.Join(t.TempDir(), "none"))
	if err != nil {
		t.Fatalf("make demo-wait: %v\n%s", err, out)
	}
	if got := requests.Load(); got != 3 {
		t.Errorf("make demo-wait asked %d times, want 3 (two 503s, then the 200)", got)
	}
	if !strings.Contains(out, "the demo is up") {
		t.Errorf("make demo-wait said %q", out)
	}
}

// A route that never answers 200 fails make demo-wait after DEMO_WAIT
// seconds with the last answer and where to look.
func TestMakeDemoWaitTimesOut(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	port, requests := demoServer(t, -1)
	// The deadline is counted in whole seconds (date +%s), so DEMO_WAIT=2
	// waits between one and two: time for several polls even when the
	// test starts at the end of a second (with 1 it could be one poll).
	out, err := makeAt(t, "demo-wait", "LEVEE_HTTP_PORT="+port, "DEMO_WAIT=2", "DEMO_POLL=0.05",
		"DEMO_ENV="+filepath.Join(t.TempDir(), "none"))
	if err == nil {
		t.Fatalf("make demo-wait succeeded against a route that never answers 200:\n%s", out)
	}
	for _, want := range []string{"did not answer 200 within 2s", "last answer 503 no-healthy-backend", "logs levee"} {
		if !strings.Contains(out, want) {
			t.Errorf("make demo-wait output %q, want it to contain %q", out, want)
		}
	}
	if requests.Load() < 2 {
		t.Errorf("make demo-wait asked %d times in 1-2s, want it to keep asking", requests.Load())
	}
}

// The port comes from .env when the environment does not set it, as it
// does for compose.
func TestMakeDemoWaitReadsThePortFromTheEnvFile(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	port, requests := demoServer(t, 0)
	env := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(env, []byte("LEVEE_API_TOKEN=x\nLEVEE_HTTP_PORT="+port+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "demo-wait", "DEMO_WAIT=5", "DEMO_POLL=0.05", "DEMO_ENV="+env)
	cmd.Dir = "../.."
	cmd.Env = withoutEnv(os.Environ(), "LEVEE_HTTP_PORT")
	if out, err := cmd.CombinedOutput(); err != nil || requests.Load() != 1 {
		t.Fatalf("make demo-wait with the port in .env: %v, %d requests\n%s", err, requests.Load(), out)
	}
}

// withoutEnv is env without the variable name.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// fakeGo puts a `go` first on PATH that logs its environment and arguments
// to the returned file and writes a stand-in for any -o output, so that the
// Makefile's release logic is tested without cross-compiling. It returns
// the environment for make and the log's path.
func fakeGo(t *testing.T) ([]string, string) {
	t.Helper()
	dir := t.TempDir()
	log := filepath.Join(dir, "go.log")
	script := `#!/bin/sh
echo "CGO_ENABLED=$CGO_ENABLED GOOS=$GOOS GOARCH=$GOARCH $*" >> "` + log + `"
while [ $# -gt 0 ]; do
  if [ "$1" = -o ]; then echo "binary for $GOOS/$GOARCH" > "$2"; fi
  shift
done
`
	if err := os.WriteFile(filepath.Join(dir, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(withoutEnv(os.Environ(), "PATH"), "PATH="+dir+":"+os.Getenv("PATH")), log
}

// make release builds a static, stamped levee per platform into DIST and
// writes SHA256SUMS that check.
func TestMakeRelease(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	env, log := fakeGo(t)
	dist := filepath.Join(t.TempDir(), "dist")
	cmd := exec.Command("make", "-s", "release", "VERSION=v1.2.3", "COMMIT=abc1234", "DIST="+dist)
	cmd.Dir = "../.."
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	calls, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"amd64", "arm64"} {
		want := "CGO_ENABLED=0 GOOS=linux GOARCH=" + arch + " build -trimpath -ldflags -s -w -X main.version=v1.2.3 -X main.commit=abc1234 -o " +
			dist + "/levee-v1.2.3-linux-" + arch + " ./cmd/levee"
		if !strings.Contains(string(calls), want+"\n") {
			t.Errorf("no build %q in:\n%s", want, calls)
		}
	}
	sums := exec.Command("sha256sum", "-c", "SHA256SUMS")
	sums.Dir = dist
	out, err := sums.CombinedOutput()
	if err != nil || strings.Count(string(out), ": OK") != 2 {
		t.Errorf("sha256sum -c SHA256SUMS: %v\n%s", err, out)
	}
}

// A release of a tree with uncommitted changes is refused before anything
// is built.
func TestMakeReleaseRefusesADirtyTree(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	env, log := fakeGo(t)
	cmd := exec.Command("make", "-s", "release", "VERSION=v1.2.3-dirty", "DIST="+filepath.Join(t.TempDir(), "dist"))
	cmd.Dir = "../.."
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "uncommitted changes") {
		t.Errorf("make release of a dirty tree: %v\n%s", err, out)
	}
	if _, err := os.Stat(log); err == nil {
		t.Errorf("make release built something from a dirty tree")
	}
}
