package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// openBreaker forces a route's breaker open through the API.
func openBreaker(t *testing.T, p *leveeProc, route string) {
	t.Helper()
	resp, err := http.Post(p.apiURL()+"/breakers/"+route+"/open", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("open breaker %s: %d", route, resp.StatusCode)
	}
}

// sendBody makes one GET through Levee carrying a body.
func sendBody(t *testing.T, p *leveeProc, host, path, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+path, strings.NewReader(body))
	req.Host = host
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("GET %s%s with a body: %v", host, path, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Serve-stale through the binary: on a forward-auth route, one user's
// kept page never reaches another user; with serveStaleForCredentials each
// gets only their own; and a GET with a body is never kept.
func TestStaleAnswersKeepUsersApartAndIgnoreGetBodies(t *testing.T) {
	users := map[string]string{"ka": "alice", "kb": "bob"}
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := users[r.Header.Get("X-Api-Key")]
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Auth-User", u)
	}))
	defer auth.Close()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "page %s of %q for %q", r.URL.Path, r.Header.Get("X-Auth-User"), body)
	}))
	defer backend.Close()
	port := portOf(t, backend.URL)

	p := startLevee(t, "--docker=false")
	route := func(name string, forCredentials bool, access string) {
		createEntrypoint(t, p, fmt.Sprintf(`{"name":%q,"protocol":"Http",
			"backends":[{"address":"127.0.0.1","port":%s,"weight":100}],
			"config":{"hostnames":[%q],%s
			          "circuit_breaker":{"min_requests":100,"cooldown":"5m","serve_stale":"5m","serve_stale_for_credentials":%v}}}`,
			name, port, name+".test", access, forCredentials))
	}
	forwardAuth := fmt.Sprintf(`"forward_auth":{"address":%q,"auth_request_headers":["X-Api-Key"],"auth_response_headers":["X-Auth-User"]},`, auth.URL)
	route("shared", false, forwardAuth)
	route("own", true, forwardAuth)
	route("plain", false, "")

	const alicePage = `page /profile of "alice" for ""`
	for _, host := range []string{"shared.test", "own.test"} {
		if code, _, body := send(t, p, http.MethodGet, host, "/profile", "X-Api-Key", "ka"); code != 200 || body != alicePage {
			t.Fatalf("%s: alice %d %q", host, code, body)
		}
	}
	if code := sendBody(t, p, "plain.test", "/search", "attacker's body"); code != 200 {
		t.Fatalf("GET with a body: %d", code)
	}
	if code, _, _ := send(t, p, http.MethodGet, "plain.test", "/kept"); code != 200 {
		t.Fatalf("plain GET: %d", code)
	}
	for _, r := range []string{"shared", "own", "plain"} {
		openBreaker(t, p, r)
	}

	expectOpen := func(what, host, path string, kv ...string) {
		t.Helper()
		code, hdr, body := send(t, p, http.MethodGet, host, path, kv...)
		if code != http.StatusServiceUnavailable || hdr.Get("X-Levee-Diagnostic") != "circuit-open" {
			t.Errorf("%s: %d %q (X-Levee-Stale %q), want the open answer", what, code, body, hdr.Get("X-Levee-Stale"))
		}
	}
	// Without serveStaleForCredentials an auth route keeps nothing.
	expectOpen("bob on shared", "shared.test", "/profile", "X-Api-Key", "kb")
	expectOpen("alice on shared", "shared.test", "/profile", "X-Api-Key", "ka")
	// With it, each user gets their own page only.
	expectOpen("bob on own", "own.test", "/profile", "X-Api-Key", "kb")
	if code, hdr, body := send(t, p, http.MethodGet, "own.test", "/profile", "X-Api-Key", "ka"); code != 200 || body != alicePage || hdr.Get("X-Levee-Stale") == "" {
		t.Errorf("alice on own: %d %q, want her own stale page", code, body)
	}
	// The answer to a GET with a body was not kept; a plain GET's was.
	expectOpen("GET /search after a GET with a body", "plain.test", "/search")
	if code, hdr, _ := send(t, p, http.MethodGet, "plain.test", "/kept"); code != 200 || hdr.Get("X-Levee-Stale") == "" {
		t.Errorf("plain GET: %d, want its stale answer", code)
	}
}
