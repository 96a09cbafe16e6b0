package forwardauth

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

// authServer answers by the request path's last element and records what
// it was asked.
type authServer struct {
	*httptest.Server
	mu   sync.Mutex
	last *http.Request
}

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.last = r.Clone(r.Context())
		a.mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/ok"):
			w.Header().Set("X-Auth-User", "alice")
			w.Header().Add("X-Auth-Groups", "admins")
			_, _ = io.WriteString(w, "fine")
		case strings.HasSuffix(r.URL.Path, "/deny"):
			w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, "go away")
		case strings.HasSuffix(r.URL.Path, "/login"):
			http.Redirect(w, r, "https://login.example/?next=x", http.StatusFound)
		case strings.HasSuffix(r.URL.Path, "/hang"):
			<-r.Context().Done()
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *authServer) asked() *http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

func compile(t *testing.T, cfg config.ForwardAuth, rec *policytest.Recorder) *Policy {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	p, err := New(&cfg, http.DefaultTransport, policy.Env{Route: "r", Rec: rec,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestForwardAuthAllows(t *testing.T) {
	a := newAuthServer(t)
	rec := &policytest.Recorder{}
	p := compile(t, config.ForwardAuth{Address: a.URL + "/ok", AuthResponseHeaders: []string{"X-Auth-User", "X-Auth-Groups", "X-Auth-Missing"}}, rec)
	r := policytest.Request("192.0.2.1:1", "203.0.113.7")
	r.Header.Set("Cookie", "session=1")
	r.Header.Set("X-Auth-User", "mallory")  // spoofed: replaced
	r.Header.Set("X-Auth-Missing", "spoof") // not in the answer: removed
	r.Header.Set("Connection", "keep-alive")
	res := policytest.Run(p, r)
	if !res.Reached || res.Code != 200 {
		t.Fatalf("not let through: %d", res.Code)
	}
	h := res.Request.Header
	if h.Get("X-Auth-User") != "alice" || h.Get("X-Auth-Groups") != "admins" || h.Get("X-Auth-Missing") != "" {
		t.Fatalf("headers to the backend: %v", h)
	}
	q := a.asked()
	if q.Method != http.MethodGet || q.Header.Get("Cookie") != "session=1" || q.Header.Get("X-Forwarded-Uri") != "/x?y=1" ||
		q.Header.Get("X-Forwarded-Method") != "GET" || q.Header.Get("X-Forwarded-Host") != "app.test" ||
		q.Header.Get("X-Forwarded-Proto") != "http" || q.Header.Get("X-Forwarded-For") != "192.0.2.1" {
		t.Fatalf("auth request: %s %v", q.Method, q.Header)
	}
	if rec.Count() != 0 {
		t.Fatalf("counted %v", rec.Got)
	}
}

func TestForwardAuthRefuses(t *testing.T) {
	a := newAuthServer(t)
	closed := func() string { // an address nothing listens on
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr + "/"
	}()
	for _, c := range []struct {
		name     string
		address  string
		timeout  time.Duration
		want     int
		reason   string
		body     string
		location string
	}{
		{name: "401 relayed", address: a.URL + "/deny", want: 401, reason: policy.ReasonUnauthorized, body: "go away"},
		{name: "redirect relayed, not followed", address: a.URL + "/login", want: 302, reason: policy.ReasonUnauthorized, location: "https://login.example/?next=x"},
		{name: "timeout", address: a.URL + "/hang", timeout: 50 * time.Millisecond, want: 503, reason: policy.ReasonAuthUnavailable},
		{name: "unreachable", address: closed, want: 503, reason: policy.ReasonAuthUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &policytest.Recorder{}
			p := compile(t, config.ForwardAuth{Address: c.address, Timeout: c.timeout}, rec)
			res := policytest.Run(p, policytest.Request("192.0.2.1:1"))
			if res.Reached || res.Code != c.want || res.Header.Get(policy.HeaderDiagnostic) != c.reason {
				t.Fatalf("%d reached=%v %v", res.Code, res.Reached, res.Header)
			}
			if c.body != "" && res.Body != c.body {
				t.Fatalf("body %q", res.Body)
			}
			if c.location != "" && res.Header.Get("Location") != c.location {
				t.Fatalf("location %q", res.Header.Get("Location"))
			}
			if rec.Count() != 1 || rec.Got[0] != Name+"/"+c.reason {
				t.Fatalf("counted %v", rec.Got)
			}
		})
	}
}

func TestForwardAuthRequestHeaders(t *testing.T) {
	a := newAuthServer(t)
	p := compile(t, config.ForwardAuth{Address: a.URL + "/ok", AuthRequestHeaders: []string{"Cookie"}}, &policytest.Recorder{})
	r := policytest.Request("10.9.0.1:1", "203.0.113.7")
	r.Header.Set("Cookie", "c")
	r.Header.Set("Authorization", "Bearer t")
	r.Header.Set("X-Forwarded-Host", "spoofed.test")
	policytest.Run(p, r)
	q := a.asked()
	if q.Header.Get("Cookie") != "c" || q.Header.Get("Authorization") != "" {
		t.Fatalf("authRequestHeaders not applied: %v", q.Header)
	}
	// Behind a trusted proxy the client is the forwarded address; the
	// client's own X-Forwarded-Host is not passed without
	// trustForwardHeader.
	if q.Header.Get("X-Forwarded-For") != "203.0.113.7" || q.Header.Get("X-Forwarded-Host") != "app.test" {
		t.Fatalf("forwarding headers: %v", q.Header)
	}
}

func TestForwardAuthBadAddressDenies(t *testing.T) {
	rec := &policytest.Recorder{}
	for _, addr := range []string{"", "auth:9000/verify", "ftp://x/"} {
		p, err := New(&config.ForwardAuth{Address: addr}, http.DefaultTransport, policy.Env{Rec: rec})
		if err == nil {
			t.Fatalf("%q accepted", addr)
		}
		if res := policytest.Run(p, policytest.Request("192.0.2.1:1")); res.Reached || res.Code != 403 ||
			res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonPolicyMisconfigured {
			t.Fatalf("%q: %d reached=%v", addr, res.Code, res.Reached)
		}
	}
}

func BenchmarkForwardAuth(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	p, _ := New(&config.ForwardAuth{Address: srv.URL, Timeout: time.Second}, &http.Transport{MaxIdleConnsPerHost: 16}, policy.Env{})
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(httptest.NewRecorder(), policytest.Request("192.0.2.1:1"), next)
	}
}

// A gateway that reads X_Auth_User as X-Auth-User (CGI, FastCGI, Rack)
// must not read the client's value as the identity the auth service
// vouched for, nor a credential the auth service never saw.
func TestForwardAuthRemovesUnderscoreSpellings(t *testing.T) {
	a := newAuthServer(t)
	p := compile(t, config.ForwardAuth{Address: a.URL + "/ok", AuthResponseHeaders: []string{"X-Auth-User", "X-Auth-Missing"},
		AuthRequestHeaders: []string{"X-Api-Key"}}, &policytest.Recorder{})
	r := policytest.Request("192.0.2.1:1")
	r.Header["X_Auth_User"] = []string{"admin"}
	r.Header["X-Auth_missing"] = []string{"admin"}
	r.Header["X-Api-Key"] = []string{"alice-key"}
	r.Header["X_api_key"] = []string{"bob-key"}
	r.Header["X_Other"] = []string{"kept"}
	res := policytest.Run(p, r)
	if !res.Reached {
		t.Fatalf("not let through: %d", res.Code)
	}
	for k, v := range res.Request.Header {
		switch k {
		case "X-Auth-User", "X-Api-Key", "X_Other", "X-Forwarded-For":
		default:
			t.Errorf("the backend gets %s: %q", k, v)
		}
	}
	//lint:ignore SA1008 Go stores an underscore name as the client spelt it: this is the key the backend sees
	if got := res.Request.Header["X_Other"]; len(got) != 1 {
		t.Errorf("an unrelated underscore field was removed: %v", res.Request.Header)
	}
	if got := a.asked().Header; len(got["X_api_key"]) != 0 || got.Get("X-Api-Key") != "alice-key" {
		t.Errorf("the auth service was asked with %v", got)
	}
}

// The auth service may read the first of two credentials and the backend
// the last: the request is refused before either reads one.
func TestForwardAuthRefusesTwoCredentials(t *testing.T) {
	a := newAuthServer(t)
	rec := &policytest.Recorder{}
	p := compile(t, config.ForwardAuth{Address: a.URL + "/ok", AuthRequestHeaders: []string{"X-Api-Key", "Cookie"}}, rec)
	r := policytest.Request("192.0.2.1:1")
	r.Header["X-Api-Key"] = []string{"alice-key", "bob-key"}
	res := policytest.Run(p, r)
	if res.Reached || res.Code != http.StatusBadRequest || res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonBadHeader {
		t.Fatalf("%d reached=%v %v", res.Code, res.Reached, res.Header)
	}
	if a.asked() != nil {
		t.Error("the auth service was asked")
	}
	if rec.Count() != 1 || rec.Got[0] != Name+"/"+policy.ReasonBadHeader {
		t.Fatalf("counted %v", rec.Got)
	}
	r = policytest.Request("192.0.2.1:1")
	r.Header["Cookie"] = []string{"a=1", "b=2"} // HTTP/2 sends cookies split
	if res := policytest.Run(p, r); !res.Reached {
		t.Fatalf("two Cookie fields refused: %d", res.Code)
	}
}
