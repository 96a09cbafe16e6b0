package conformance

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Path spellings against a guarded /admin beside an open / on one backend:
// whatever the spelling, the backend never reads a path it takes for
// /admin (or below) unless the guarding route's policy passed. The client
// never has credentials, so a request the backend reads as /admin is a
// bypass. Each vector is one policy (basic auth, an IP allow-list the
// client is outside of, forward auth to a service that refuses everyone),
// with the route's path case-sensitive or path_case_insensitive; over TLS
// every spelling is also sent over HTTP/2, as a raw :path.

// pathSpellings: want is the verdict on a case-sensitive guarded route,
// ciWant on a case-insensitive one: "bad" (400 bad-path), "deny" (401 or
// 403 from the policy), "open" (200 from the open route, for a path no
// backend reads as /admin).
var pathSpellings = []struct {
	path, want, ciWant string
}{
	{"/admin/users", "deny", "deny"},
	{"//admin/users", "deny", "deny"},
	{"///admin", "deny", "deny"},
	{"/admin//users", "deny", "deny"},
	{"/admin;x/secret", "deny", "deny"},
	{"/admin;jsessionid=1", "deny", "deny"},
	{"/;x/admin", "deny", "deny"},
	{"/ADMIN", "open", "deny"},
	{"/Admin", "open", "deny"},
	{"/ADMIN;x/users", "open", "deny"},
	{"/admin.", "open", "deny"},
	{"/admin%20", "open", "deny"},
	{"/admin.%20./users", "open", "deny"},
	{"/ad%6Din", "deny", "deny"},
	{"/adminx", "open", "open"},
	{"/admin/%2e%2e", "bad", "bad"},
	{"/x/%2E%2E/admin", "bad", "bad"},
	{"/x/../admin", "bad", "bad"},
	{"/./admin", "bad", "bad"},
	{"/%2e/admin", "bad", "bad"},
	{"/..;/admin", "bad", "bad"},
	{"/x/..;/admin", "bad", "bad"},
	{"/.../admin", "bad", "bad"},
	{"/%20/admin", "bad", "bad"},
	{"/%2fadmin", "bad", "bad"},
	{"/x%2F..%2Fadmin", "bad", "bad"},
	{"/%5cadmin", "bad", "bad"},
	{"/admin%3bx", "bad", "bad"},
	{"/%252e%252e/admin", "bad", "bad"},
	{"/x/%252Fadmin", "bad", "bad"},
	{"/admin%00", "bad", "bad"},
	{"/admin%0d%0a", "bad", "bad"},
	{"/x%3f/../admin", "bad", "bad"},
	{"/x%23/../admin", "bad", "bad"},
}

func pathSuite() []vector {
	var out []vector
	for _, kind := range []string{"basic-auth", "ip-allow-list", "forward-auth"} {
		for _, ci := range []bool{false, true} {
			name := kind
			if ci {
				name += "-case-insensitive"
			}
			out = append(out, vector{name: name, run: func(t *testing.T, e *env) { runPathSpellings(t, e, kind, ci) }})
		}
	}
	out = append(out, vector{name: "query-with-fragment", run: runQueryWithFragment},
		vector{name: "redirect-regex-off-site", run: runRedirectOffSite})
	return out
}

// A redirectRegex group captured from the path never chooses the host the
// client is sent to: "${1}" of "/legacy//evil.example/x" through
// "^https?://[^/]+/legacy(.*)" or of "/go/https:/evil.example" through
// "^https?://[^/]+/go/(.*)" would be another site in a browser.
func runRedirectOffSite(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, nil, map[string]any{
		"redirect_regex": map[string]any{"regex": `^https?://[^/]+/go/(.*)$`, "replacement": "${1}"},
	})
	e.p.createRoute(t, v.route+"-legacy", v.host, v.b.addr, map[string]any{
		"path":           "/legacy",
		"redirect_regex": map[string]any{"regex": `^https?://[^/]+/legacy(.*)$`, "replacement": "${1}"},
	})
	for _, path := range []string{"/legacy//evil.example/x", "/legacy///evil.example", "/go/https:/evil.example/x",
		"/go/https:evil.example", "/go/javascript:alert(1)", "/go/HTTP:/evil.example", "/go/%2F%2Fevil.example"} {
		c := v.dialUnlisted()
		if err := v.get(c, path); err != nil {
			t.Fatal(err)
		}
		_, m, err := c.final("GET", 5*time.Second)
		c.close()
		if err != nil {
			t.Fatalf("GET %s: no answer: %v", path, err)
		}
		loc := m.get("Location")
		switch {
		case verdict(m.status, m.get("X-Levee-Diagnostic")) == "bad":
		case m.status/100 == 3 && len(loc) == 1 && onSite(loc[0]):
		default:
			v.Errorf("GET %s: answer %q with Location %q: another site, or not a refusal (400 bad-path)", path, m.start, loc)
		}
	}
	c := v.dial()
	if err := v.get(c, "/go/new/page"); err != nil {
		t.Fatal(err)
	}
	if _, m, err := c.final("GET", 5*time.Second); err != nil || m.status != http.StatusFound || len(m.get("Location")) != 1 || m.get("Location")[0] != "new/page" {
		t.Fatalf("GET /go/new/page: %v %v, want 302 to new/page", m, err)
	}
	if n := len(v.b.requests()); n != 0 {
		v.Errorf("the backend read %d requests; every one is answered by the redirect", n)
	}
}

// onSite reports whether a browser resolves the Location loc on the
// request's own site: no scheme, not scheme-relative (a backslash is a
// slash to a browser).
func onSite(loc string) bool {
	l := strings.ReplaceAll(strings.TrimSpace(loc), "\\", "/")
	if strings.HasPrefix(l, "//") {
		return false
	}
	i := strings.IndexAny(l, ":/?#")
	return i < 0 || l[i] != ':'
}

// guard is the route config of the guarded /admin for a policy kind.
func guard(t *testing.T, kind string, ci bool) map[string]any {
	cfg := map[string]any{"path": "/admin", "path_case_insensitive": ci}
	switch kind {
	case "basic-auth":
		hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		cfg["basic_auth"] = map[string]any{"users": []string{"admin:" + string(hash)}}
	case "ip-allow-list":
		cfg["ip_allow_list"] = map[string]any{"source_range": []string{"192.0.2.0/24"}}
	case "forward-auth":
		deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusUnauthorized)
		}))
		t.Cleanup(deny.Close)
		cfg["forward_auth"] = map[string]any{"address": deny.URL}
	}
	return cfg
}

func runPathSpellings(t *testing.T, e *env, kind string, ci bool) {
	v := e.start(t, backendOpts{}, nil, nil)
	e.p.createRoute(t, v.route+"-admin", v.host, v.b.addr, guard(t, kind, ci))
	var h2 *h2Client
	if e.tls {
		h2 = dialH2(t, e.p.frontAddr, v.host)
	}
	for _, s := range pathSpellings {
		want := s.want
		if ci {
			want = s.ciWant
		}
		c := v.dialUnlisted()
		if err := v.get(c, s.path); err != nil {
			t.Fatalf("GET %s: %v", s.path, err)
		}
		_, m, err := c.final("GET", 5*time.Second)
		c.close() // the process takes 64 client connections
		if err != nil {
			v.Errorf("GET %s: no answer: %v (client received %q)", s.path, err, c.received())
			continue
		}
		if got := verdict(m.status, m.get("X-Levee-Diagnostic")); got != want {
			v.Errorf("GET %s: answer %q (%v), want %s", s.path, m.start, m.get("X-Levee-Diagnostic"), want)
		}
		if h2 != nil {
			status, diag := h2.get(t, s.path)
			if got := verdict(status, []string{diag}); got != want && !(want == "bad" && status == 0) {
				v.Errorf("HTTP/2 :path %s: status %d (%q), want %s", s.path, status, diag, want)
			}
		}
	}
	for _, r := range v.b.requests() {
		if readsAsAdmin(r.target, ci) {
			v.Errorf("the backend read %q, which it takes for /admin, and the client had no credentials", r.line())
		}
	}
}

// A fragment is never part of a request target (RFC 9112 3.2, RFC 9113
// 8.3.1): a "#" in the query (an HTTP/2 :path may carry one; an HTTP/1.1
// request line too) is refused, never written on the backend's request
// line.
func runQueryWithFragment(t *testing.T, e *env) {
	v := e.start(t, backendOpts{}, nil, nil)
	c := v.dial()
	if err := v.get(c, "/p?a=1#frag"); err != nil {
		t.Fatal(err)
	}
	_, m, err := c.final("GET", 5*time.Second)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	v.checkStatus(m, http.StatusBadRequest)
	v.checkDiag(m, "bad-path")
	if e.tls {
		h2 := dialH2(t, e.p.frontAddr, v.host)
		if status, diag := h2.get(t, "/p?a=1#frag"); status != http.StatusBadRequest || diag != "bad-path" {
			v.Errorf("HTTP/2 :path /p?a=1#frag: status %d %q, want 400 bad-path", status, diag)
		}
	}
	v.checkBackendRead(v.followUps(c))
}

// verdict names an answer as pathSpellings does.
func verdict(status int, diag []string) string {
	switch {
	case status == http.StatusBadRequest && len(diag) == 1 && diag[0] == "bad-path":
		return "bad"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "deny"
	case status == http.StatusOK:
		return "open"
	}
	return "other"
}

// readsAsAdmin reports whether a common backend reads target as /admin or
// below: decoded once or twice, backslashes as slashes (IIS), slash runs
// merged (nginx), ";" parameters dropped (Tomcat, Jetty, Spring), dot
// segments resolved; with windows also in lower case, without the dots
// and spaces that end a segment (IIS, ASP.NET).
func readsAsAdmin(target string, windows bool) bool {
	p, _, _ := strings.Cut(target, "?")
	forms := []string{p}
	for range 2 {
		if d, err := url.PathUnescape(forms[len(forms)-1]); err == nil {
			forms = append(forms, d)
		}
	}
	for _, f := range forms {
		var segs []string
		for seg := range strings.SplitSeq(strings.ReplaceAll(f, "\\", "/"), "/") {
			seg, _, _ = strings.Cut(seg, ";")
			if windows {
				seg = strings.TrimRight(strings.ToLower(seg), ". ")
			}
			switch seg {
			case "", ".":
			case "..":
				if len(segs) > 0 {
					segs = segs[:len(segs)-1]
				}
			default:
				segs = append(segs, seg)
			}
		}
		if len(segs) > 0 && segs[0] == "admin" {
			return true
		}
	}
	return false
}
