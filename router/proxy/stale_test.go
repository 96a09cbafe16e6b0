package proxy

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// staleBackend answers by path: /cc/<value> with that Cache-Control,
// /cookie with Set-Cookie, /vary with Vary: Accept-Encoding, /big with
// 1000 bytes, anything else "page <path> #<n>"; with failing set, 500.
type staleBackend struct {
	srv     *httptest.Server
	failing atomic.Bool
	n       atomic.Int64
}

func newStaleBackend(t *testing.T) *staleBackend {
	t.Helper()
	b := &staleBackend{}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if b.failing.Load() {
			w.WriteHeader(500)
			return
		}
		n := b.n.Add(1)
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, "/cc/"):
			w.Header().Set("Cache-Control", strings.TrimPrefix(p, "/cc/"))
		case p == "/cookie":
			w.Header().Set("Set-Cookie", "session=x")
		case p == "/vary":
			w.Header().Set("Vary", "Accept-Encoding")
		case p == "/big":
			io.WriteString(w, strings.Repeat("x", 1000))
			return
		case p == "/aged":
			w.Header().Set("Age", "100")
		}
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintf(w, "page %s #%d", p, n)
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *staleBackend) backend() config.Backend {
	host, port, _ := net.SplitHostPort(b.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: host, Port: p, Weight: config.DefaultWeight}
}

// staleSetup: route "web" keeping stale answers for 1m, whose breaker
// opens after 2 failures in a row for 5m.
func staleSetup(t *testing.T, opts Options, forCredentials bool) (*harness, *staleBackend) {
	t.Helper()
	opts.EjectAfter = -1
	h := newHarness(t, opts)
	b := newStaleBackend(t)
	web := withBreaker(ep("web", b.backend()), breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 5 * time.Minute})
	web.CircuitBreaker.Fallback = config.Fallback{ServeStale: time.Minute, ServeStaleForCredentials: forCredentials}
	h.set(config.SourceDocker, web)
	return h, b
}

func (b *staleBackend) trip(t *testing.T, h *harness) {
	t.Helper()
	b.failing.Store(true)
	h.get("web.test", "/failing")
	h.get("web.test", "/failing")
	if s := breakerState(t, h, "web"); s != "open" {
		t.Fatalf("state %s", s)
	}
}

// getWith sends a GET for web.test with extra header fields.
func getWith(t *testing.T, h *harness, method, path string, kv ...string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, h.front.URL+path, nil)
	req.Host = "web.test"
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

func TestStaleServesTheLastGoodAnswerWithItsAge(t *testing.T) {
	h, b := staleSetup(t, Options{}, false)
	h.get("web.test", "/page")
	if code, body, _ := h.get("web.test", "/page?q=1"); code != 200 || body != "page /page #2" {
		t.Fatalf("%d %q", code, body)
	}
	b.trip(t, h)
	h.clock.Advance(30 * time.Second)
	code, body, hdr := getWith(t, h, http.MethodGet, "/page?q=1")
	if code != 200 || body != "page /page #2" {
		t.Fatalf("stale: %d %q, want the last good answer", code, body)
	}
	for k, want := range map[string]string{"Age": "30", HeaderStale: "30", "Warning": `110 levee "Response is Stale"`,
		"Retry-After": "270", "Content-Type": "text/plain", "Content-Length": strconv.Itoa(len(body))} {
		if got := hdr.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	// HEAD from the GET's answer, without a body.
	if code, body, hdr := getWith(t, h, http.MethodHead, "/page?q=1"); code != 200 || body != "" || hdr.Get(HeaderStale) != "30" {
		t.Fatalf("HEAD: %d %q %v", code, body, hdr)
	}
	// Another URL was never answered: the open answer.
	expectOpenAt(t, h, "/never")
	// POST is never answered stale.
	if resp := h.do(http.MethodPost, "web.test", "/page?q=1", nil); resp.StatusCode != 503 {
		t.Fatalf("POST: %d", resp.StatusCode)
	}
	// Older than serveStale: gone.
	h.clock.Advance(31 * time.Second)
	expectOpenAt(t, h, "/page?q=1")
	if n := fallbackCount(t, h, "web", fallbackNone, fallbackKindStale); n != 2 {
		t.Fatalf("kind=stale %v, want 2", n)
	}
	if n := fallbackCount(t, h, "web", fallbackNone, fallbackKindMiss); n != 2 {
		t.Fatalf("kind=stale_miss %v, want 2", n)
	}
	if st, _ := h.r.Breaker("web"); st.OpenTraffic != "stale" {
		t.Fatalf("open traffic %q", st.OpenTraffic)
	}
}

func expectOpenAt(t *testing.T, h *harness, path string) {
	t.Helper()
	code, _, hdr := getWith(t, h, http.MethodGet, path)
	if code != 503 || hdr.Get(HeaderDiagnostic) != DiagnosticCircuitOpen || hdr.Get(HeaderStale) != "" {
		t.Fatalf("%s: %d %v, want the open answer", path, code, hdr)
	}
}

// The Age an answer already had counts toward serveStale.
func TestStaleCountsTheAnswersOwnAge(t *testing.T) {
	h, b := staleSetup(t, Options{}, false)
	h.get("web.test", "/aged")
	b.trip(t, h)
	expectOpenAt(t, h, "/aged") // 100s old already: over 1m
}

// Answers a shared cache may not keep or serve stale are never kept.
func TestStaleHonoursCacheControlAndCookies(t *testing.T) {
	h, b := staleSetup(t, Options{}, false)
	paths := []string{"/cc/no-store", "/cc/private", "/cc/no-cache", "/cc/max-age=60,%20must-revalidate", "/cc/s-maxage=5", "/cookie"}
	for _, p := range paths {
		h.get("web.test", p)
	}
	// Request no-store: not kept either.
	getWith(t, h, http.MethodGet, "/asked-not", "Cache-Control", "no-store")
	h.get("web.test", "/cc/max-age=60") // allowed
	b.trip(t, h)
	for _, p := range append(paths, "/asked-not") {
		expectOpenAt(t, h, p)
	}
	if code, _, _ := getWith(t, h, http.MethodGet, "/cc/max-age=60"); code != 200 {
		t.Fatalf("max-age answer not kept: %d", code)
	}
}

func TestStaleCredentialsRule(t *testing.T) {
	t.Run("off: requests with credentials neither recorded nor served", func(t *testing.T) {
		h, b := staleSetup(t, Options{}, false)
		getWith(t, h, http.MethodGet, "/private", "Authorization", "Bearer a")
		h.get("web.test", "/public")
		b.trip(t, h)
		expectOpenAt(t, h, "/private")
		if code, _, _ := getWith(t, h, http.MethodGet, "/private", "Authorization", "Bearer a"); code != 503 {
			t.Fatalf("credentials answered stale: %d", code)
		}
		// A public page kept without credentials is not served to a
		// request with a cookie either.
		if code, _, _ := getWith(t, h, http.MethodGet, "/public", "Cookie", "id=1"); code != 503 {
			t.Fatalf("cookie answered stale: %d", code)
		}
		if code, _, _ := getWith(t, h, http.MethodGet, "/public"); code != 200 {
			t.Fatalf("public page: %d", code)
		}
	})
	t.Run("on: only the same credentials get the answer", func(t *testing.T) {
		h, b := staleSetup(t, Options{}, true)
		getWith(t, h, http.MethodGet, "/me", "Authorization", "Bearer alice")
		getWith(t, h, http.MethodGet, "/me", "Cookie", "session=bob")
		b.trip(t, h)
		if code, body, _ := getWith(t, h, http.MethodGet, "/me", "Authorization", "Bearer alice"); code != 200 || body != "page /me #1" {
			t.Fatalf("alice: %d %q", code, body)
		}
		if code, body, _ := getWith(t, h, http.MethodGet, "/me", "Cookie", "session=bob"); code != 200 || body != "page /me #2" {
			t.Fatalf("bob: %d %q", code, body)
		}
		if code, _, _ := getWith(t, h, http.MethodGet, "/me", "Authorization", "Bearer mallory"); code != 503 {
			t.Fatalf("other credentials: %d", code)
		}
		expectOpenAt(t, h, "/me")
	})
}

func TestStaleHonoursVary(t *testing.T) {
	h, b := staleSetup(t, Options{}, false)
	getWith(t, h, http.MethodGet, "/vary", "Accept-Encoding", "gzip")
	b.trip(t, h)
	if code, _, _ := getWith(t, h, http.MethodGet, "/vary", "Accept-Encoding", "gzip"); code != 200 {
		t.Fatalf("same Accept-Encoding: %d", code)
	}
	if code, _, _ := getWith(t, h, http.MethodGet, "/vary", "Accept-Encoding", "br"); code != 503 {
		t.Fatalf("other Accept-Encoding: %d", code)
	}
}

// The per-route bounds: an answer over the entry bound is not kept, and
// the least recently used answer goes first.
func TestStaleBoundsThroughTheProxy(t *testing.T) {
	h, b := staleSetup(t, Options{Stale: StaleLimits{Entries: 2, EntryBytes: 400}}, false)
	h.get("web.test", "/big") // 1000 bytes
	h.get("web.test", "/a")
	h.get("web.test", "/b")
	h.get("web.test", "/c") // evicts /a
	b.trip(t, h)
	expectOpenAt(t, h, "/big")
	expectOpenAt(t, h, "/a")
	for _, p := range []string{"/b", "/c"} {
		if code, _, _ := getWith(t, h, http.MethodGet, p); code != 200 {
			t.Fatalf("%s: %d", p, code)
		}
	}
}

func TestStaleCacheLimits(t *testing.T) {
	entry := func(key string, size int64) *staleEntry { return &staleEntry{key: key, size: size, stored: epoch} }
	cases := []struct {
		name  string
		lim   StaleLimits
		put   []*staleEntry
		want  []string // keys kept
		bytes int64
	}{
		{"entries bound evicts the least recently used", StaleLimits{Entries: 2, Bytes: 1000, EntryBytes: 100},
			[]*staleEntry{entry("a", 10), entry("b", 10), entry("c", 10)}, []string{"b", "c"}, 20},
		{"bytes bound", StaleLimits{Entries: 10, Bytes: 25, EntryBytes: 20},
			[]*staleEntry{entry("a", 10), entry("b", 10), entry("c", 10)}, []string{"b", "c"}, 20},
		{"over the entry bound: not kept", StaleLimits{Entries: 10, Bytes: 1000, EntryBytes: 50},
			[]*staleEntry{entry("a", 10), entry("big", 51)}, []string{"a"}, 10},
		{"a key replaced keeps one entry", StaleLimits{Entries: 10, Bytes: 1000, EntryBytes: 100},
			[]*staleEntry{entry("a", 10), entry("a", 30)}, []string{"a"}, 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newStaleCache(tc.lim.withDefaults())
			for _, e := range tc.put {
				c.put(e)
			}
			n, bytes := c.len()
			if n != len(tc.want) || bytes != tc.bytes {
				t.Fatalf("kept %d entries, %d bytes; want %d, %d", n, bytes, len(tc.want), tc.bytes)
			}
			for _, k := range tc.want {
				if c.get(k, epoch, time.Minute) == nil {
					t.Errorf("%s not kept", k)
				}
			}
		})
	}
	// Expired entries are dropped when asked for.
	c := newStaleCache(StaleLimits{}.withDefaults())
	c.put(entry("a", 10))
	if c.get("a", epoch.Add(2*time.Minute), time.Minute) != nil {
		t.Fatal("served an entry older than serveStale")
	}
	if n, _ := c.len(); n != 0 {
		t.Fatalf("expired entry kept")
	}
}

// The credential hash frames each field: moving a value from one field
// to another, or splitting one value in two, changes it.
func TestStaleCredentialFieldsAreFramed(t *testing.T) {
	sum := func(kv ...string) string {
		hdr := http.Header{}
		for i := 0; i+1 < len(kv); i += 2 {
			hdr.Add(kv[i], kv[i+1])
		}
		h := sha256.New()
		writeFields(h, hdr, "Authorization", "Cookie", "X-Api-Key")
		return hex.EncodeToString(h.Sum(nil))
	}
	seen := map[string][]string{}
	for _, kv := range [][]string{
		{}, {"Authorization", "Basic x"}, {"Cookie", "Basic x"}, {"X-Api-Key", "Basic x"},
		{"Authorization", "Basic y"}, {"Authorization", "a", "Authorization", "b"}, {"Authorization", "ab"},
		{"Authorization", "a", "Cookie", "b"},
	} {
		k := sum(kv...)
		if prev, dup := seen[k]; dup {
			t.Errorf("%v and %v hash alike", prev, kv)
		}
		seen[k] = kv
	}
}

// Keeping an answer never holds it back: a streamed answer reaches the
// client chunk by chunk while it is being copied, and is kept once
// complete.
func TestStaleRecordingDoesNotDelayStreaming(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	next := make(chan struct{})
	var failing atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(500)
			return
		}
		io.WriteString(w, "first;")
		w.(http.Flusher).Flush()
		select { // the second chunk only once the client has the first
		case <-next:
			io.WriteString(w, "second")
		case <-time.After(10 * time.Second): // held back: the client fails on "first;"
		}
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	web := withBreaker(ep("web", config.Backend{Address: host, Port: p, Weight: 1}), breaker.Params{MinRequests: 100, ConsecutiveFailures: 1, Cooldown: time.Minute})
	web.CircuitBreaker.Fallback.ServeStale = time.Minute
	h.set(config.SourceDocker, web)

	resp := h.do(http.MethodGet, "web.test", "/stream", nil)
	buf := make([]byte, len("first;"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first;" {
		close(next)
		t.Fatalf("first chunk: %q %v", buf, err)
	}
	close(next)
	rest, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(rest) != "second" {
		t.Fatalf("rest %q", rest)
	}
	failing.Store(true)
	h.get("web.test", "/fail")
	if code, body, _ := h.get("web.test", "/stream"); code != 200 || body != "first;second" {
		t.Fatalf("kept answer: %d %q", code, body)
	}
}
