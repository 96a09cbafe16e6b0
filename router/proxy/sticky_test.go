package proxy

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

var stickyCookieRe = regexp.MustCompile(`^srv=[0-9a-f]{16}; Path=/; HttpOnly; Secure; SameSite=Lax$`)

// stickyGet sends GET / on host with the cookie (if any) and returns the
// backend that answered and the sticky Set-Cookie line ("" if none).
func stickyGet(t *testing.T, h *harness, host, cookie string) (backend, setCookie string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
	req.Host = host
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "srv=") {
			setCookie = c
		}
	}
	return resp.Header.Get("X-Backend"), setCookie
}

func stickyRoute(bs ...*testBackend) config.Entrypoint {
	var cbs []config.Backend
	for _, b := range bs {
		cbs = append(cbs, b.backend())
	}
	e := ep("sticky", cbs...)
	e.Transform.Sticky = &config.Sticky{CookieName: "srv", Secure: true, HTTPOnly: true, SameSite: config.SameSiteLax}
	return e
}

func TestStickySessions(t *testing.T) {
	a, b, c := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "c")
	h := newHarness(t, Options{})
	h.set(config.SourceDocker, stickyRoute(a, b, c))

	first, set := stickyGet(t, h, "sticky.test", "")
	if !stickyCookieRe.MatchString(set) {
		t.Fatalf("Set-Cookie %q", set)
	}
	for _, bk := range []*testBackend{a, b, c} {
		if strings.Contains(set, bk.backend().Address) {
			t.Fatalf("the cookie names an address: %q", set)
		}
	}
	cookie := strings.SplitN(set, ";", 2)[0]
	for range 12 {
		got, again := stickyGet(t, h, "sticky.test", cookie)
		if got != first || again != "" {
			t.Fatalf("with the cookie: backend %s (want %s), Set-Cookie %q", got, first, again)
		}
	}
	// Without the cookie the balancer spreads as before.
	seen := map[string]bool{}
	for range 6 {
		got, _ := stickyGet(t, h, "sticky.test", "")
		seen[got] = true
	}
	if len(seen) != 3 {
		t.Fatalf("round robin without cookies reached %v", seen)
	}
	// A cookie that names nothing (forged, or of another route) is ignored
	// and replaced.
	if got, again := stickyGet(t, h, "sticky.test", "srv=0123456789abcdef"); got == "" || again == "" {
		t.Fatalf("forged cookie: backend %q Set-Cookie %q", got, again)
	}

	// The backend leaves the route: the balancer picks, a new cookie names
	// the new backend, and that cookie sticks.
	var rest []*testBackend
	for _, bk := range []*testBackend{a, b, c} {
		if bk.name != first {
			rest = append(rest, bk)
		}
	}
	h.set(config.SourceDocker, stickyRoute(rest...))
	got, set2 := stickyGet(t, h, "sticky.test", cookie)
	if got == first || got == "" || set2 == "" || set2 == set {
		t.Fatalf("gone backend: answered by %q, Set-Cookie %q", got, set2)
	}
	cookie2 := strings.SplitN(set2, ";", 2)[0]
	for range 4 {
		if again, _ := stickyGet(t, h, "sticky.test", cookie2); again != got {
			t.Fatalf("re-issued cookie: %s, want %s", again, got)
		}
	}
}

// An ejected backend falls back to the balancer, and a retry re-pins the
// client to the backend that answered.
func TestStickyEjectedAndRetried(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	h := newHarness(t, Options{})
	e := stickyRoute(a, b)
	e.Retry.Attempts = 2
	e.PassiveHealth = config.PassiveHealth{ConsecutiveFailures: 1, EjectTime: time.Minute, MaxEjectTime: time.Minute, MaxEjectedShare: 1}
	h.set(config.SourceDocker, e)

	first, set := stickyGet(t, h, "sticky.test", "")
	cookie := strings.SplitN(set, ";", 2)[0]
	pinned, other := a, b
	if first == "b" {
		pinned, other = b, a
	}
	pinned.mode.Store(modeFail)
	got, set2 := stickyGet(t, h, "sticky.test", cookie)
	if got != other.name || set2 == "" || strings.SplitN(set2, ";", 2)[0] == cookie {
		t.Fatalf("retry: answered by %q with Set-Cookie %q", got, set2)
	}
	// The failure ejected the pinned backend: even healthy again, it is
	// not picked for the old cookie while ejected.
	pinned.mode.Store(modeOK)
	before := pinned.hits.Load()
	if got, set3 := stickyGet(t, h, "sticky.test", cookie); got != other.name || set3 == "" {
		t.Fatalf("ejected: answered by %q, Set-Cookie %q", got, set3)
	}
	if pinned.hits.Load() != before {
		t.Fatal("the ejected backend was tried")
	}
}

// The backend's own cookies go back beside Levee's.
func TestStickyKeepsTheBackendsCookies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Set-Cookie", "session=1")
		w.Header().Add("Set-Cookie", "theme=dark")
	}))
	defer srv.Close()
	bk := &testBackend{name: "x", srv: srv}
	h := newHarness(t, Options{})
	h.set(config.SourceDocker, stickyRoute(bk))
	resp := h.do(http.MethodGet, "sticky.test", "/", nil)
	resp.Body.Close()
	got := resp.Header.Values("Set-Cookie")
	if len(got) != 3 || got[0] != "session=1" || got[1] != "theme=dark" || !stickyCookieRe.MatchString(got[2]) {
		t.Fatalf("Set-Cookie %q", got)
	}
}

// BenchmarkServeHTTPSticky is BenchmarkServeHTTP's no-breaker case on a
// sticky route with three backends: "cookie" is a client pinned by its
// cookie (the id lookup), "new" one without (the balancer and a new
// cookie).
func BenchmarkServeHTTPSticky(b *testing.B) {
	r := router.New(router.Options{Logger: zerolog.Nop()})
	b.Cleanup(r.Close)
	p := New(r, Options{Logger: zerolog.Nop()})
	b.Cleanup(p.Close)
	e := ep("bench", benchBackend(b), benchBackend(b), benchBackend(b))
	e.Transform.Sticky = &config.Sticky{CookieName: "srv"}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{e}})
	rt, _ := r.Snapshot().Route("bench")
	cookie := "srv=" + p.sticky.id("bench", rt.Backends()[1].HostPort())
	for _, c := range []struct{ name, cookie string }{{"cookie", cookie}, {"new", ""}} {
		b.Run(c.name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "http://bench.test/path?q=1", nil)
				req.RemoteAddr = "192.0.2.1:1234"
				if c.cookie != "" {
					req.Header["Cookie"] = []string{c.cookie}
				}
				clear(w.h)
				p.ServeHTTP(w, req)
			}
		})
	}
}

// An upgrade on a sticky route still tunnels: the cookie's writer unwraps
// for the hijack. The 101 is the backend's, relayed as it came: no cookie.
func TestStickyUpgrade(t *testing.T) {
	h := newHarness(t, Options{})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		_ = brw.Flush()
		_, _ = io.Copy(conn, brw)
	}))
	defer be.Close()
	e := stickyRoute(&testBackend{name: "ws", srv: be})
	h.set(config.SourceAPI, e)

	conn := h.dialFront()
	fmt.Fprintf(conn, "GET /chat HTTP/1.1\r\nHost: sticky.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Set-Cookie") != "" {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
	}
	_, _ = conn.Write([]byte("hello"))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("echo: %q %v", buf, err)
	}
}

// stickyCookieFor returns the cookie (name=value) that h issues for the
// backend named want on the sticky route of bs, asking until the balancer
// has picked it.
func stickyCookieFor(t *testing.T, h *harness, want string) string {
	t.Helper()
	for range 8 {
		got, set := stickyGet(t, h, "sticky.test", "")
		if got == want {
			return strings.SplitN(set, ";", 2)[0]
		}
	}
	t.Fatalf("the balancer never picked %s", want)
	return ""
}

// The id is keyed: not the unkeyed SHA-256 of route and address, which
// anyone can invert by trying addresses; processes with the same secret
// agree on it, processes with different ones do not.
func TestStickyIDIsKeyed(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	secret := []byte("0123456789abcdef0123456789abcdef")
	one := newHarness(t, Options{StickySecret: secret})
	two := newHarness(t, Options{StickySecret: secret})
	other := newHarness(t, Options{StickySecret: []byte("another secret, of another fleet")})
	for _, h := range []*harness{one, two, other} {
		h.set(config.SourceDocker, stickyRoute(a, b))
	}

	cookie := stickyCookieFor(t, one, "a")
	for _, bk := range []*testBackend{a, b} {
		addr := net.JoinHostPort(bk.backend().Address, strconv.Itoa(bk.backend().Port))
		sum := sha256.Sum256([]byte("sticky\x00" + addr))
		if cookie == "srv="+hex.EncodeToString(sum[:8]) {
			t.Fatalf("the cookie %q is the unkeyed hash of %s", cookie, addr)
		}
	}
	// The same secret: the other process honours the cookie.
	for range 4 {
		if got, set := stickyGet(t, two, "sticky.test", cookie); got != "a" || set != "" {
			t.Fatalf("same secret: answered by %q with Set-Cookie %q, want a and no new cookie", got, set)
		}
	}
	// Another secret: its id for a differs, and the first cookie names
	// nothing there (a new pick, a new cookie).
	if own := stickyCookieFor(t, other, "a"); own == cookie {
		t.Fatalf("different secrets, same id %q", own)
	}
	if got, set := stickyGet(t, other, "sticky.test", cookie); got == "" || set == "" || strings.HasPrefix(set, cookie+";") {
		t.Fatalf("another secret's cookie: answered by %q with Set-Cookie %q, want a new pick and cookie", got, set)
	}
}

// A cookie of the unkeyed scheme (an older Levee's) is no cookie: a new
// pick and a new cookie, never an error.
func TestStickyUnkeyedCookieIgnored(t *testing.T) {
	a, b := newBackend(t, "a"), newBackend(t, "b")
	h := newHarness(t, Options{})
	h.set(config.SourceDocker, stickyRoute(a, b))
	addr := net.JoinHostPort(a.backend().Address, strconv.Itoa(a.backend().Port))
	sum := sha256.Sum256([]byte("sticky\x00" + addr))
	old := "srv=" + hex.EncodeToString(sum[:8])
	for range 4 {
		req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
		req.Host = "sticky.test"
		req.Header.Set("Cookie", old)
		resp, err := h.front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		set := ""
		for _, c := range resp.Header.Values("Set-Cookie") {
			if strings.HasPrefix(c, "srv=") {
				set = c
			}
		}
		if resp.StatusCode != http.StatusOK || !stickyCookieRe.MatchString(set) || strings.HasPrefix(set, old+";") {
			t.Fatalf("unkeyed cookie: %d, Set-Cookie %q; want 200 and a new cookie", resp.StatusCode, set)
		}
	}
}
