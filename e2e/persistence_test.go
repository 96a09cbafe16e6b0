package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func portOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// createEntrypoint POSTs a JSON entrypoint to the API and expects 201.
func createEntrypoint(t *testing.T, p *leveeProc, payload string) map[string]any {
	t.Helper()
	resp, err := http.Post(p.apiURL()+"/entrypoints", "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /entrypoints = %d %s", resp.StatusCode, b)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("POST /entrypoints body %q: %v", b, err)
	}
	return out
}

// An entrypoint the API acknowledged with 201 survives kill -9 of the
// process: the write is durable before the answer.
func TestAPIEntrypointSurvivesKill9(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("hello from backend"))
	}))
	defer backend.Close()
	state := filepath.Join(t.TempDir(), "state.json")

	p := startLevee(t, "--docker=false", "--state-file", state)
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"app","protocol":"Http",
		"backends":[{"address":"127.0.0.1","port":%s,"weight":100}],
		"config":{"hostnames":["app.example.com"],
		          "circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":10}}}`, portOf(t, backend.URL)))
	// A bulk write acknowledged with 200 is durable too, all of it.
	bulk := fmt.Sprintf(`{"operations":[
		{"op":"create","entrypoint":{"name":"bulk-1","backends":[{"address":"127.0.0.1","port":%[1]s}],"config":{"hostnames":["bulk-1.example.com"]}}},
		{"op":"create","entrypoint":{"name":"bulk-2","backends":[{"address":"127.0.0.1","port":%[1]s}],"config":{"hostnames":["bulk-2.example.com"]}}}]}`,
		portOf(t, backend.URL))
	resp, err := http.Post(p.apiURL()+"/entrypoints/bulk", "application/json", strings.NewReader(bulk))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /entrypoints/bulk = %d", resp.StatusCode)
	}
	if err := p.signal(syscall.SIGKILL, 10*time.Second); err == nil {
		t.Fatal("kill -9 should end the process with an error status")
	}

	p2 := startLevee(t, "--docker=false", "--state-file", state)
	status, _, body := get(t, p2.proxyURL()+"/", "app.example.com")
	if status != http.StatusOK || body != "hello from backend" {
		t.Fatalf("after restart: %d %q, want 200 from the backend", status, body)
	}
	status, _, body = get(t, p2.apiURL()+"/entrypoints/app", "")
	if status != http.StatusOK || !strings.Contains(body, `"app.example.com"`) {
		t.Fatalf("GET /entrypoints/app after restart = %d %s", status, body)
	}
	for _, host := range []string{"bulk-1.example.com", "bulk-2.example.com"} {
		if status, _, body := get(t, p2.proxyURL()+"/", host); status != http.StatusOK || body != "hello from backend" {
			t.Fatalf("%s after restart: %d %q, want the bulk-written route", host, status, body)
		}
	}
}

// A corrupt state file stops start-up with a message naming the file, and
// the file is left exactly as it was.
func TestCorruptStateFileStopsStartup(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state.json")
	corrupt := []byte(`{"version":1,"entrypoints":[{"name":`)
	if err := os.WriteFile(state, corrupt, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(leveeBinary, "serve", "--docker=false", "--state-file", state,
		"--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0", "--log-format", "json")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("levee started with a corrupt state file; output:\n%s", out)
	}
	if !strings.Contains(string(out), state) {
		t.Fatalf("the error does not name the state file %s:\n%s", state, out)
	}
	after, _ := os.ReadFile(state)
	if string(after) != string(corrupt) {
		t.Fatalf("state file was modified: %q", after)
	}
}
