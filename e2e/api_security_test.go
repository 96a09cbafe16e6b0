package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// apiCall sends one request to the API with a Host and header fields, and
// returns the status and body.
func apiCall(t *testing.T, p *leveeProc, method, path, host, body string, kv ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, p.apiURL()+path, rd)
	if host != "" {
		req.Host = host
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s (Host %s): %v", method, path, host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A bcrypt hash (cost 4) of "pa".
const e2eAliceLine = "alice:$2a$04$Zjn3LZUgYlVdNrDSqKrJF.mwdtAD4Lk0ot6fLFbPmRo0u53ZQDkEm"

// The tokenless API on loopback through the binary: a rebinding name
// reaches nothing, a cross-site form cannot open a breaker, no answer
// shows a password hash, and a GET-modify-PUT keeps the hash (the route
// still admits alice). curl-like clients keep working.
func TestAPIRefusesRebindingCrossSiteWritesAndShowsNoHashes(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret page")
	}))
	defer backend.Close()
	p := startLevee(t, "--docker=false")
	created := createEntrypoint(t, p, fmt.Sprintf(`{"name":"app","protocol":"Http",
		"backends":[{"address":"127.0.0.1","port":%s,"weight":100}],
		"config":{"hostnames":["app.test"],"basic_auth":{"users":[%q],"realm":"r"},
		          "circuit_breaker":{"min_requests":100,"cooldown":"1m"}}}`, portOf(t, backend.URL), e2eAliceLine))
	hash := e2eAliceLine[len("alice:"):]
	if b, _ := json.Marshal(created); strings.Contains(string(b), hash) {
		t.Errorf("POST answer shows the hash: %s", b)
	}
	rebind := "rebind.evil.example:" + portOf(t, p.apiURL())

	// DNS rebinding: nothing read, nothing written.
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/entrypoints", ""}, {"GET", "/entrypoints/app", ""}, {"GET", "/dashboard/", ""},
		{"POST", "/entrypoints", `{"name":"evil","config":{"hostnames":["evil.test"]}}`},
		{"POST", "/breakers/app/open", ""},
	} {
		code, body := apiCall(t, p, c.method, c.path, rebind, c.body, "Content-Type", "application/json")
		if code != http.StatusMisdirectedRequest || strings.Contains(body, hash) || strings.Contains(body, "app.test") {
			t.Errorf("%s %s with Host %s: %d %.200s, want 421 and nothing of the API", c.method, c.path, rebind, code, body)
		}
	}

	if code, _, _ := get(t, p.apiURL()+"/entrypoints/evil", ""); code != 404 {
		t.Errorf("a rebinding POST created an entrypoint: GET /entrypoints/evil %d", code)
	}

	// CSRF: a cross-site form, a cross-site fetch, a form without Origin.
	for _, c := range []struct {
		what, body string
		want       int
		kv         []string
	}{
		{"cross-site form", "x=1", 403, []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example"}},
		{"cross-site fetch", "", 403, []string{"Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"}},
		{"form without Origin", "x=1", 415, []string{"Content-Type", "application/x-www-form-urlencoded"}},
	} {
		if code, body := apiCall(t, p, "POST", "/breakers/app/open", "", c.body, c.kv...); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.what, code, body, c.want)
		}
	}
	if _, _, view := get(t, p.apiURL()+"/breakers/app", ""); !strings.Contains(view, `"state":"closed"`) {
		t.Fatalf("a refused request opened the breaker: %s", view)
	}

	// No read shows the hash; GET-modify-PUT keeps it.
	for _, path := range []string{"/entrypoints", "/entrypoints/app"} {
		if code, _, body := get(t, p.apiURL()+path, ""); code != 200 || strings.Contains(body, hash) || !strings.Contains(body, `"alice:(redacted)"`) {
			t.Errorf("GET %s: %d %.300s, want alice:(redacted) and no hash", path, code, body)
		}
	}
	_, _, view := get(t, p.apiURL()+"/entrypoints/app", "")
	var v struct {
		Payload map[string]any `json:"payload"`
	}
	if err := json.Unmarshal([]byte(view), &v); err != nil || v.Payload == nil {
		t.Fatalf("GET /entrypoints/app payload: %v %s", err, view)
	}
	v.Payload["config"].(map[string]any)["hostnames"] = []string{"app.test", "www.app.test"}
	edited, _ := json.Marshal(v.Payload)
	if code, body := apiCall(t, p, "PUT", "/entrypoints/app", "", string(edited), "Content-Type", "application/json"); code != 200 || strings.Contains(body, hash) {
		t.Fatalf("PUT of the edited payload: %d %s", code, body)
	}
	waitRouted := time.Now().Add(10 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
		req.Host = "www.app.test"
		req.SetBasicAuth("alice", "pa")
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && string(b) == "secret page" {
			break
		}
		if time.Now().After(waitRouted) {
			t.Fatalf("alice after the round trip: %d %s (X-Levee-Diagnostic %q), want the page: the stored hash was lost",
				resp.StatusCode, b, resp.Header.Get("X-Levee-Diagnostic"))
		}
	}

	// Well-behaved clients: curl's bodiless POST, a same-origin page.
	if code, body := apiCall(t, p, "POST", "/breakers/app/open", "", ""); code != 200 {
		t.Errorf("bodiless POST: %d %s", code, body)
	}
	if code, body := apiCall(t, p, "POST", "/breakers/app/close", "", "", "Sec-Fetch-Site", "same-origin", "Origin", p.apiURL()); code != 200 {
		t.Errorf("same-origin POST: %d %s", code, body)
	}
	for _, host := range []string{"localhost:" + portOf(t, p.apiURL()), ""} {
		if code, _ := apiCall(t, p, "GET", "/health", host, ""); code != 200 {
			t.Errorf("GET /health with Host %q: %d", host, code)
		}
	}
}

// --api-hosts adds names the API answers to; others stay refused.
func TestAPIHostsFlag(t *testing.T) {
	p := startLevee(t, "--docker=false", "--api-hosts", "levee.internal, ops.example.com")
	for host, want := range map[string]int{
		"levee.internal:3035": 200, "OPS.example.com.": 200, "levee.internal.evil.example": 421, "evil.example": 421,
	} {
		if code, body := apiCall(t, p, "GET", "/entrypoints", host, ""); code != want {
			t.Errorf("Host %s: %d %s, want %d", host, code, body, want)
		}
	}
}
