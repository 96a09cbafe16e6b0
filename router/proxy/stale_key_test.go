package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// authedBackend answers "profile of <X-Auth-User>" (or of the basic-auth
// user when the Authorization reached it), 500 while failing.
func authedBackend(t *testing.T, failing *atomic.Bool) config.Backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(500)
			return
		}
		who := r.Header.Get("X-Auth-User")
		if u, _, ok := r.BasicAuth(); ok {
			who = u
		}
		io.WriteString(w, "profile of "+who)
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: host, Port: p, Weight: config.DefaultWeight}
}

// keyAuthService admits X-Api-Key ka as alice and kb as bob, and says so in
// X-Auth-User; anything else gets 401.
func keyAuthService(t *testing.T) string {
	t.Helper()
	users := map[string]string{"ka": "alice", "kb": "bob"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := users[r.Header.Get("X-Api-Key")]
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Auth-User", u)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// authStaleSetup: route "web" with the access policies, keeping stale
// answers for 1m, whose breaker opens after 2 failures in a row.
func authStaleSetup(t *testing.T, access config.AccessPolicies, forCredentials bool) (*harness, *atomic.Bool) {
	t.Helper()
	h := newHarness(t, Options{EjectAfter: -1})
	failing := &atomic.Bool{}
	web := withBreaker(ep("web", authedBackend(t, failing)), breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 5 * time.Minute})
	web.CircuitBreaker.Fallback = config.Fallback{ServeStale: time.Minute, ServeStaleForCredentials: forCredentials}
	web.Access = access
	h.set(config.SourceDocker, web)
	return h, failing
}

// tripWith opens web's breaker with two failing requests carrying kv.
func tripWith(t *testing.T, h *harness, failing *atomic.Bool, kv ...string) {
	t.Helper()
	failing.Store(true)
	for range 2 {
		if code, _, _ := getWith(t, h, http.MethodGet, "/failing", kv...); code != 500 {
			t.Fatalf("failing request: %d, want the backend's 500", code)
		}
	}
	if s := breakerState(t, h, "web"); s != "open" {
		t.Fatalf("state %s", s)
	}
}

func expectProfile(t *testing.T, h *harness, want string, kv ...string) {
	t.Helper()
	code, body, hdr := getWith(t, h, http.MethodGet, "/profile", kv...)
	if want == "" {
		if code != 503 || hdr.Get(HeaderDiagnostic) != DiagnosticCircuitOpen {
			t.Fatalf("%v: %d %q, want the open answer", kv, code, body)
		}
		return
	}
	if code != 200 || body != want {
		t.Fatalf("%v: %d %q, want %q", kv, code, body, want)
	}
}

// The header a forward-auth policy reads (X-Api-Key) and the identity it
// injects (X-Auth-User) are credentials for the stale cache: another
// user never gets Alice's page.
func TestStaleForwardAuthCredentials(t *testing.T) {
	fa := func(reqHdrs ...string) config.AccessPolicies {
		return config.AccessPolicies{ForwardAuth: &config.ForwardAuth{Address: keyAuthService(t), Timeout: 5 * time.Second,
			AuthRequestHeaders: reqHdrs, AuthResponseHeaders: []string{"X-Auth-User"}}}
	}
	t.Run("off: an auth route keeps nothing", func(t *testing.T) {
		h, failing := authStaleSetup(t, fa("X-Api-Key"), false)
		expectProfile(t, h, "profile of alice", "X-Api-Key", "ka")
		tripWith(t, h, failing, "X-Api-Key", "ka")
		expectProfile(t, h, "", "X-Api-Key", "kb")
		expectProfile(t, h, "", "X-Api-Key", "ka")
	})
	t.Run("on: keyed by the headers the policy reads and sets", func(t *testing.T) {
		h, failing := authStaleSetup(t, fa("X-Api-Key"), true)
		expectProfile(t, h, "profile of alice", "X-Api-Key", "ka")
		tripWith(t, h, failing, "X-Api-Key", "ka")
		expectProfile(t, h, "", "X-Api-Key", "kb")
		expectProfile(t, h, "profile of alice", "X-Api-Key", "ka")
		// A refused key never reaches the cache.
		if code, _, _ := getWith(t, h, http.MethodGet, "/profile", "X-Api-Key", "nope"); code != 401 {
			t.Fatalf("unknown key: %d, want the auth service's 401", code)
		}
	})
	t.Run("on, without authRequestHeaders: every field is read, nothing is kept", func(t *testing.T) {
		h, failing := authStaleSetup(t, fa(), true)
		expectProfile(t, h, "profile of alice", "X-Api-Key", "ka")
		tripWith(t, h, failing, "X-Api-Key", "ka")
		expectProfile(t, h, "", "X-Api-Key", "ka")
	})
}

// Basic auth with removeHeader takes Authorization off before the
// backend: the credentials are still the key.
func TestStaleBasicAuthCredentialsSurviveRemoveHeader(t *testing.T) {
	line := func(user, pass string) string {
		hash, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		return user + ":" + string(hash)
	}
	access := config.AccessPolicies{BasicAuth: &config.BasicAuth{Realm: "r", RemoveHeader: true,
		Users: []string{line("alice", "pa"), line("bob", "pb")}}}
	basic := func(user, pass string) []string {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.SetBasicAuth(user, pass)
		return []string{"Authorization", r.Header.Get("Authorization")}
	}
	for _, forCredentials := range []bool{false, true} {
		h, failing := authStaleSetup(t, access, forCredentials)
		expectProfile(t, h, "profile of ", basic("alice", "pa")...) // the backend sees no Authorization
		tripWith(t, h, failing, basic("alice", "pa")...)
		expectProfile(t, h, "", basic("bob", "pb")...)
		want := ""
		if forCredentials {
			want = "profile of "
		}
		expectProfile(t, h, want, basic("alice", "pa")...)
	}
}

// A GET with a body is never kept (the key is the URL only) nor answered
// stale.
func TestStaleNeverKeepsAGetWithABody(t *testing.T) {
	h, b := staleSetup(t, Options{}, false)
	h.do(http.MethodGet, "web.test", "/sized", strings.NewReader("poison")).Body.Close()
	h.do(http.MethodGet, "web.test", "/chunked", io.MultiReader(strings.NewReader("poison"))).Body.Close()
	h.get("web.test", "/plain")
	if code := chunkedGet(t, h, "/empty", "0\r\n\r\n"); code != 200 {
		t.Fatalf("a GET with an empty chunked body: %d", code)
	}
	b.trip(t, h)
	expectOpenAt(t, h, "/sized")
	expectOpenAt(t, h, "/chunked")
	if code, _, _ := getWith(t, h, http.MethodGet, "/plain"); code != 200 {
		t.Fatalf("a plain GET is kept: %d", code)
	}
	// An empty body of unknown length (an HTTP/3 GET's, here chunked) is
	// no body: kept, and answered stale.
	if code := chunkedGet(t, h, "/empty", "0\r\n\r\n"); code != 200 {
		t.Fatalf("a GET with an empty chunked body while the breaker is open: %d, want its stale 200", code)
	}
	if code := chunkedGet(t, h, "/plain", "1\r\nx\r\n0\r\n\r\n"); code != 503 {
		t.Fatalf("a GET with a chunked body answered stale: %d", code)
	}
	if resp := h.do(http.MethodGet, "web.test", "/plain", strings.NewReader("x")); resp.StatusCode != 503 {
		resp.Body.Close()
		t.Fatalf("a GET with a body answered stale: %d", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
}

// chunkedGet sends a GET with a chunked body (chunks, the framed bytes)
// on a connection of its own and returns the answer's status.
func chunkedGet(t *testing.T, h *harness, path, chunks string) int {
	t.Helper()
	conn := h.dialFront()
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: web.test\r\nTransfer-Encoding: chunked\r\n\r\n"+chunks); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A GET whose chunked body never comes is answered at once while the
// breaker is open (fail fast): the read ahead that would tell an empty
// body from one on its way waits staleBodyWait, not the body timeout, and
// the body not known empty, the GET is not answered stale but gets the
// open answer. The client's silence is no backend's failure.
func TestStaleStalledChunkedGetGetsTheOpenAnswerAtOnce(t *testing.T) {
	h, b := staleSetup(t, Options{RequestBodyTimeout: time.Minute}, false)
	h.get("web.test", "/x")
	b.trip(t, h)
	conn := h.dialFront()
	// Far below the body timeout: missing it is the failure.
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: web.test\r\nTransfer-Encoding: chunked\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("a stalled chunked GET while the breaker is open: %v, want the open answer before the body timeout", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticCircuitOpen ||
		resp.Header.Get("Retry-After") == "" || resp.Header.Get(HeaderStale) != "" {
		t.Fatalf("got %d %v, want the open answer with Retry-After", resp.StatusCode, resp.Header)
	}
	if s := breakerState(t, h, "web"); s != "open" {
		t.Fatalf("state %s", s)
	}
	if st, _ := h.r.Breaker("web"); st.Failures != 2 {
		t.Fatalf("breaker failures %d, want the 2 that tripped it", st.Failures)
	}
	// The kept answer is still there for a GET without a body.
	if code, body, _ := getWith(t, h, http.MethodGet, "/x"); code != 200 || body != "page /x #1" {
		t.Fatalf("plain GET after: %d %q, want the stale answer", code, body)
	}
}

// Over HTTP/2, a GET whose stream ends in an empty DATA frame after its
// headers (no END_STREAM on them: its length is unknown) is a GET without
// a body, answered stale; one whose DATA never comes gets the open answer
// before the body timeout.
func TestStaleHTTP2GetOfUnknownLength(t *testing.T) {
	th := newTLSHarness(t)
	b := newStaleBackend(t)
	web := withBreaker(tlsRoute("web", b.backend()), breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 5 * time.Minute})
	web.CircuitBreaker.Fallback = config.Fallback{ServeStale: time.Minute}
	th.set(config.SourceDocker, web)
	c := *th.h2
	c.Timeout = 5 * time.Second // far below the 30s body timeout: missing it is the failure
	get := func(path string, body io.Reader) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, th.secure.URL+path, body)
		req.Host = "web.test"
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	get("/x", nil)
	b.failing.Store(true)
	get("/failing", nil)
	get("/failing", nil)
	if s := breakerState(t, th.harness, "web"); s != "open" {
		t.Fatalf("state %s", s)
	}
	// A reader of its own: the client knows no length and sends the
	// headers without END_STREAM, then an empty DATA frame ending it.
	resp := get("/x", io.MultiReader())
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderStale) == "" {
		t.Fatalf("HTTP/2 GET ending after its headers: %s %d %v, want the stale answer", resp.Proto, resp.StatusCode, resp.Header)
	}
	stalled, _ := io.Pipe() // never written: the stream stays open
	resp = get("/x", stalled)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticCircuitOpen ||
		resp.Header.Get("Retry-After") == "" || resp.Header.Get(HeaderStale) != "" {
		t.Fatalf("stalled HTTP/2 GET: %d %v, want the open answer with Retry-After", resp.StatusCode, resp.Header)
	}
	stalled.Close()
}
