package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// make demo-env writes a private .env with an API token that Levee
// accepts, and never replaces a setting that is already there.
func TestMakeDemoEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	if out, err := makeAt(t, "demo-env", "DEMO_ENV="+path); err != nil {
		t.Fatalf("make demo-env: %v\n%s", err, out)
	}
	first := envFile(t, path)
	if err := checkToken(first["LEVEE_API_TOKEN"]); err != nil || first["LEVEE_API_TOKEN"] == "" {
		t.Errorf("generated LEVEE_API_TOKEN %q: %v", first["LEVEE_API_TOKEN"], err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v (%v), want 0600", path, st.Mode(), err)
	}
	if out, err := makeAt(t, "demo-env", "DEMO_ENV="+path); err != nil {
		t.Fatalf("make demo-env again: %v\n%s", err, out)
	}
	if again := envFile(t, path); again["LEVEE_API_TOKEN"] != first["LEVEE_API_TOKEN"] {
		t.Errorf("a second make demo-env replaced the token")
	}

	// A user's own file (no final newline) keeps its lines and gains the
	// missing setting on a line of its own.
	own := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(own, []byte("LEVEE_HTTP_PORT=8081"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := makeAt(t, "demo-env", "DEMO_ENV="+own); err != nil {
		t.Fatalf("make demo-env: %v\n%s", err, out)
	}
	if got := envFile(t, own); got["LEVEE_HTTP_PORT"] != "8081" || checkToken(got["LEVEE_API_TOKEN"]) != nil || got["LEVEE_API_TOKEN"] == "" {
		t.Errorf("make demo-env on an existing file: %v", got)
	}
}
