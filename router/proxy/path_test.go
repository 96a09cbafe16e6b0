package proxy

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/router/config"
)

// backendReadings are the paths the common backends read in a request
// target they receive: the target decoded (once and twice), with
// backslashes as slashes (IIS), slash runs merged (nginx), ";" parameters
// dropped (Tomcat, Jetty, Spring), dot segments resolved; and, with
// windows, in lower case without the dots and spaces that end a segment
// (IIS, ASP.NET).
func backendReadings(target string, windows bool) []string {
	p, _, _ := strings.Cut(target, "?")
	forms := []string{p}
	for range 2 {
		if d, err := url.PathUnescape(forms[len(forms)-1]); err == nil {
			forms = append(forms, d)
		}
	}
	var out []string
	for _, f := range forms {
		f = strings.ReplaceAll(f, "\\", "/")
		var segs []string
		for seg := range strings.SplitSeq(f, "/") {
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
		out = append(out, "/"+strings.Join(segs, "/"))
	}
	return out
}

// readsAsAdmin reports whether some backend reads target as /admin or
// below it.
func readsAsAdmin(target string, windows bool) bool {
	for _, p := range backendReadings(target, windows) {
		if p == "/admin" || strings.HasPrefix(p, "/admin/") {
			return true
		}
	}
	return false
}

// recordingBackend answers 200 to everything and records each request
// target it receives, by Host.
type recordingBackend struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]string
}

func newRecordingBackend(t *testing.T) *recordingBackend {
	b := &recordingBackend{got: map[string][]string{}}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.mu.Lock()
		b.got[r.Host] = append(b.got[r.Host], r.RequestURI)
		b.mu.Unlock()
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *recordingBackend) take(host string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	got := b.got[host]
	delete(b.got, host)
	return got
}

// The request paths an attacker spells to reach a guarded /admin through
// the open / route beside it. want is the answer on a case-sensitive
// guarded route, ciWant on a case-insensitive one: 400 (refused), 401 or
// 403 (the policy refused; "deny" below), 200 (the open route, for a
// path no backend reads as /admin).
var bypassSpellings = []struct {
	path         string
	want, ciWant string
}{
	{"/admin/users", "deny", "deny"},
	{"//admin/users", "deny", "deny"},
	{"///admin", "deny", "deny"},
	{"/admin//users", "deny", "deny"},
	{"/admin;x/secret", "deny", "deny"},
	{"/admin;jsessionid=1", "deny", "deny"},
	{"/admin;", "deny", "deny"},
	{"/;x/admin", "deny", "deny"},
	{"/;/admin", "deny", "deny"},
	{"/ADMIN", "open", "deny"},
	{"/Admin/users", "open", "deny"},
	{"/ADMIN;x/users", "open", "deny"},
	{"/admin.", "open", "deny"},
	{"/admin%20", "open", "deny"},
	{"/admin.%20./users", "open", "deny"},
	{"/ad%6Din", "deny", "deny"},
	{"/%61dmin/users", "deny", "deny"},
	{"/adminx", "open", "open"},
	{"/admin/%2e%2e", "bad", "bad"},
	{"/admin/%2E%2E/admin", "bad", "bad"},
	{"/x/../admin", "bad", "bad"},
	{"/x/%2e%2e/admin", "bad", "bad"},
	{"/./admin", "bad", "bad"},
	{"/%2e/admin", "bad", "bad"},
	{"/..;/admin", "bad", "bad"},
	{"/x/..;/admin", "bad", "bad"},
	{"/x/.;x/admin", "bad", "bad"},
	{"/.../admin", "bad", "bad"},
	{"/%20/admin", "bad", "bad"},
	{"/%2fadmin", "bad", "bad"},
	{"/x%2F..%2Fadmin", "bad", "bad"},
	{"/%5cadmin", "bad", "bad"},
	{"/x\\..\\admin", "bad", "bad"},
	{"/admin%3bx", "bad", "bad"},
	{"/x%3B/admin", "bad", "bad"},
	{"/%252e%252e/admin", "bad", "bad"},
	{"/x/%252Fadmin", "bad", "bad"},
	{"/admin%00", "bad", "bad"},
	{"/x%00/../admin", "bad", "bad"},
	{"/admin%0d%0a", "bad", "bad"},
	{"/x%3f/../admin", "bad", "bad"},
	{"/x%23/../admin", "bad", "bad"},
}

// bypassRoutes guards /admin on three hosts per case mode, with basic
// auth, an IP allow-list the client is outside of, and forward auth to a
// service that refuses everyone, each beside an open / route on the same
// backend.
func bypassRoutes(t *testing.T, backend config.Backend) []config.Entrypoint {
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(deny.Close)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var eps []config.Entrypoint
	for _, ci := range []bool{false, true} {
		for _, kind := range []string{"basic", "allow", "forward"} {
			host := kind + ".test"
			if ci {
				host = "ci-" + host
			}
			open := route("open-"+host, "/", host)
			guarded := route("guarded-"+host, "/admin", host)
			guarded.PathCaseInsensitive = ci
			switch kind {
			case "basic":
				guarded.Access.BasicAuth = &config.BasicAuth{Users: []string{"admin:" + string(hash)}, Realm: "x"}
			case "allow":
				guarded.Access.IPAllowList = &config.IPAllowList{SourceRange: []string{"192.0.2.0/24"}}
			case "forward":
				guarded.Access.ForwardAuth = &config.ForwardAuth{Address: deny.URL, Timeout: 5 * time.Second}
			}
			open.Backends = []config.Backend{backend}
			guarded.Backends = []config.Backend{backend}
			eps = append(eps, open, guarded)
		}
	}
	return eps
}

// No spelling of a path reaches the backend as a path it reads as /admin
// without the guarding route's policy passing: basic auth, IP allow-list
// and forward auth, with the route's path case-sensitive and
// case-insensitive.
func TestPathSpellingsDoNotBypassPolicies(t *testing.T) {
	h := newHarness(t, Options{})
	b := newRecordingBackend(t)
	u, _ := url.Parse(b.srv.URL)
	host, port, _ := strings.Cut(u.Host, ":")
	be := config.Backend{Address: host, Port: atoiT(t, port), Weight: config.DefaultWeight}
	h.set(config.SourceAPI, bypassRoutes(t, be)...)
	for _, ci := range []bool{false, true} {
		for _, kind := range []string{"basic", "allow", "forward"} {
			vhost := kind + ".test"
			if ci {
				vhost = "ci-" + vhost
			}
			for _, c := range bypassSpellings {
				want := c.want
				if ci {
					want = c.ciWant
				}
				resp := rawExchange(t, h, "GET "+c.path+" HTTP/1.1\r\nHost: "+vhost+"\r\n\r\n", 5*time.Second)
				got := b.take(vhost)
				for _, target := range got {
					if readsAsAdmin(target, ci) {
						t.Errorf("%s %s: the backend received %q, which it reads as /admin, without the policy", vhost, c.path, target)
					}
				}
				if verdict := verdictOf(resp); verdict != want {
					t.Errorf("%s %s: got %d %q (%s), want %s; backend got %q", vhost, c.path, resp.StatusCode,
						resp.Header.Get(HeaderDiagnostic), verdict, want, got)
				}
			}
		}
	}
}

// verdictOf names an answer as bypassSpellings does.
func verdictOf(resp *http.Response) string {
	switch {
	case resp.StatusCode == http.StatusBadRequest && resp.Header.Get(HeaderDiagnostic) == DiagnosticBadPath:
		return "bad"
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return "deny"
	case resp.StatusCode == http.StatusOK:
		return "open"
	}
	return "other"
}

// A request the policy admits reaches the backend in the normal form it
// was matched in: the route's policies and the backend see one path.
func TestNormalisedPathIsWhatTheBackendGets(t *testing.T) {
	h := newHarness(t, Options{})
	b := newRecordingBackend(t)
	u, _ := url.Parse(b.srv.URL)
	host, port, _ := strings.Cut(u.Host, ":")
	admin := route("admin", "/admin", "n.test")
	admin.Access.IPAllowList = &config.IPAllowList{SourceRange: []string{"127.0.0.0/8", "::1/128"}}
	admin.Backends = []config.Backend{{Address: host, Port: atoiT(t, port), Weight: config.DefaultWeight}}
	h.set(config.SourceAPI, admin)
	for _, c := range []struct{ path, want string }{
		{"//admin//users/", "/admin/users/"},
		{"/admin;jsessionid=1/x;y=2?q=1;2", "/admin/x?q=1;2"},
		{"/admin/a%20b;x", "/admin/a%20b"},
		{"/admin/caf%C3%A9", "/admin/caf%C3%A9"},
		{"/admin/a:b@c", "/admin/a:b@c"},
		{"/admin/.well-known/x", "/admin/.well-known/x"},
	} {
		resp := rawExchange(t, h, "GET "+c.path+" HTTP/1.1\r\nHost: n.test\r\n\r\n", 5*time.Second)
		got := b.take("n.test")
		if resp.StatusCode != http.StatusOK || len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: got %d, backend received %q; want 200 and %q", c.path, resp.StatusCode, got, c.want)
		}
	}
}

// Forward auth is asked about the path the backend then receives: the
// policy and the backend see one form.
func TestForwardAuthSeesTheNormalForm(t *testing.T) {
	var mu sync.Mutex
	var asked []string
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Header.Get("X-Forwarded-Uri"))
		mu.Unlock()
	}))
	t.Cleanup(auth.Close)
	h := newHarness(t, Options{})
	b := newRecordingBackend(t)
	u, _ := url.Parse(b.srv.URL)
	host, port, _ := strings.Cut(u.Host, ":")
	admin := route("admin", "/admin", "fa.test")
	admin.Access.ForwardAuth = &config.ForwardAuth{Address: auth.URL, Timeout: 5 * time.Second}
	admin.Backends = []config.Backend{{Address: host, Port: atoiT(t, port), Weight: config.DefaultWeight}}
	h.set(config.SourceAPI, admin)
	resp := rawExchange(t, h, "GET //admin;x//users;y?q=1 HTTP/1.1\r\nHost: fa.test\r\n\r\n", 5*time.Second)
	got := b.take("fa.test")
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != http.StatusOK || len(asked) != 1 || asked[0] != "/admin/users?q=1" || len(got) != 1 || got[0] != "/admin/users?q=1" {
		t.Fatalf("got %d; the auth service was asked about %q, the backend received %q; want both /admin/users?q=1", resp.StatusCode, asked, got)
	}
}

// --strict-paths refuses what would otherwise be rewritten, and passes a
// path already in normal form.
func TestStrictPathsRefuseInsteadOfRewriting(t *testing.T) {
	h := newHarness(t, Options{StrictPaths: true})
	a := newBackend(t, "a")
	h.set(config.SourceAPI, ep("root", a.backend()))
	for _, path := range []string{"//admin", "/admin;x", "/a/;b"} {
		resp := rawExchange(t, h, "GET "+path+" HTTP/1.1\r\nHost: root.test\r\n\r\n", 5*time.Second)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderDiagnostic) != DiagnosticBadPath {
			t.Errorf("%s: got %d %q, want 400 %s", path, resp.StatusCode, resp.Header.Get(HeaderDiagnostic), DiagnosticBadPath)
		}
	}
	if n := a.hits.Load(); n != 0 {
		t.Fatalf("the backend saw %d refused requests", n)
	}
	if code, _, _ := h.get("root.test", "/admin/x"); code != http.StatusOK {
		t.Fatalf("a normal path got %d", code)
	}
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
