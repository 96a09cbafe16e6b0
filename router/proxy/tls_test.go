package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/server"
)

// tlsHarness is a harness whose handler is also served over TLS with
// HTTP/2 (net/http's server, as levee serve runs its TLS listeners), and
// whose plain front knows it is the "web" listener. Redirects from web go
// to websecure (public port 8443) or to "public", a TLS listener of public
// port 41443 (not served: only a redirect target).
type tlsHarness struct {
	*harness
	secure *httptest.Server
	h2     *http.Client
	plain  string // URL of the plain listener
}

func newTLSHarness(t *testing.T) *tlsHarness {
	t.Helper()
	h := newHarness(t, Options{AccessLog: true})
	th := &tlsHarness{harness: h}
	websecure := &router.Listener{Name: "websecure", TLS: true, PublicPort: 8443}
	public := &router.Listener{Name: "public", TLS: true, PublicPort: 41443}
	th.secure = httptest.NewUnstartedServer(h.p)
	th.secure.EnableHTTP2 = true
	th.secure.Config.BaseContext = func(net.Listener) context.Context {
		return router.WithListener(context.Background(), websecure)
	}
	th.secure.StartTLS()
	t.Cleanup(th.secure.Close)
	th.h2 = th.secure.Client()
	th.h2.Transport.(*http.Transport).ForceAttemptHTTP2 = true

	web := &router.Listener{Name: "web", TLSListeners: []*router.Listener{websecure, public}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &server.Server{Handler: h.p, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return router.WithListener(context.Background(), web) }}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close(); <-done })
	th.plain = "http://" + ln.Addr().String()
	return th
}

func (th *tlsHarness) send(c *http.Client, base, method, host, path string) *http.Response {
	th.t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(""))
	if err != nil {
		th.t.Fatal(err)
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		th.t.Fatalf("%s %s%s: %v", method, host, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

func tlsRoute(id string, bs ...config.Backend) config.Entrypoint {
	e := ep(id, bs...)
	e.TLS = config.TLS{Enabled: true, Redirect: true, HSTS: 365 * 24 * time.Hour}
	return e
}

// A TLS route on a plain listener answers 308 to https with the same host,
// path and query, on the TLS listener's port, whatever the method; a plain
// client never reaches the backend.
func TestRedirectToHTTPS(t *testing.T) {
	th := newTLSHarness(t)
	a := newBackend(t, "a")
	th.set(config.SourceDocker, tlsRoute("shop", a.backend()))
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		resp := th.send(noFollow, th.plain, method, "shop.test:8080", "/a/b%20c?x=1&y=%C3%A9")
		if resp.StatusCode != http.StatusPermanentRedirect {
			t.Fatalf("%s: status %d, want 308", method, resp.StatusCode)
		}
		if got, want := resp.Header.Get("Location"), "https://shop.test:8443/a/b%20c?x=1&y=%C3%A9"; got != want {
			t.Errorf("%s: Location %q, want %q", method, got, want)
		}
		if resp.Header.Get("Strict-Transport-Security") != "" {
			t.Errorf("%s: HSTS sent over plain HTTP", method)
		}
	}
	if a.hits.Load() != 0 {
		t.Errorf("backend reached %d times by plain requests", a.hits.Load())
	}
	// tls.redirect=false: the plain listener has no such route.
	e := tlsRoute("shop", a.backend())
	e.TLS.Redirect = false
	th.set(config.SourceDocker, e)
	if resp := th.send(noFollow, th.plain, http.MethodGet, "shop.test", "/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("redirect=false: status %d, want 404", resp.StatusCode)
	}
}

// The redirect goes to a TLS listener the route serves on, on its public
// port: a route with listeners=public is sent to public's 41443, not to
// the first TLS listener; one that serves on no TLS listener is not
// redirected.
func TestRedirectToTheRoutesTLSListener(t *testing.T) {
	th := newTLSHarness(t)
	a := newBackend(t, "a")
	e := tlsRoute("shop", a.backend())
	e.Listeners = []string{"public"}
	th.set(config.SourceDocker, e)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp := th.send(noFollow, th.plain, http.MethodGet, "shop.test:8080", "/x?y=1")
	if got, want := resp.Header.Get("Location"), "https://shop.test:41443/x?y=1"; resp.StatusCode != http.StatusPermanentRedirect || got != want {
		t.Errorf("listeners=public: %d Location %q, want 308 %q", resp.StatusCode, got, want)
	}
	e.Listeners = []string{"admin"}
	th.set(config.SourceDocker, e)
	if resp := th.send(noFollow, th.plain, http.MethodGet, "shop.test", "/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("listeners=admin (no TLS listener): status %d Location %q, want 404", resp.StatusCode, resp.Header.Get("Location"))
	}
	if a.hits.Load() != 0 {
		t.Errorf("backend reached %d times by plain requests", a.hits.Load())
	}
}

func TestHTTPSLocation(t *testing.T) {
	cases := []struct {
		host, target string
		port         int
		want         string
	}{
		{"a.test", "/", 0, "https://a.test/"},
		{"a.test:80", "/x?q", 443, "https://a.test/x?q"},
		{"a.test", "/x", 8443, "https://a.test:8443/x"},
		{"[::1]:8080", "/", 0, "https://[::1]/"},
		{"[::1]", "/", 8443, "https://[::1]:8443/"},
	}
	for _, c := range cases {
		req := httptest.NewRequest(http.MethodGet, c.target, nil)
		req.Host = c.host
		if got := httpsLocation(req, c.port); got != c.want {
			t.Errorf("%s %s %d: %q, want %q", c.host, c.target, c.port, got, c.want)
		}
	}
}

// Over HTTP/2 on the TLS listener, the request path works as over
// HTTP/1.1: HSTS, retries, the breaker, request metrics, the access log.
func TestHTTP2RequestPath(t *testing.T) {
	th := newTLSHarness(t)
	a := newBackend(t, "a")
	e := tlsRoute("shop", deadBackend(t), a.backend())
	e.Retry.Attempts = 2
	e.LoadBalancer = config.RoundRobin
	th.set(config.SourceDocker, e)
	for range 4 {
		resp := th.send(th.h2, th.secure.URL, http.MethodGet, "shop.test", "/")
		if resp.ProtoMajor != 2 {
			t.Fatalf("protocol %s, want HTTP/2", resp.Proto)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Backend") != "a" {
			t.Fatalf("status %d from %q, want 200 from a (retried past the dead backend)", resp.StatusCode, resp.Header.Get("X-Backend"))
		}
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
			t.Errorf("HSTS %q", got)
		}
	}
	if got := metricValue(t, th.harness, "levee_retries_total", map[string]string{"route": "shop"}); got < 1 {
		t.Errorf("levee_retries_total %v, want retries counted over h2", got)
	}
	if got := metricValue(t, th.harness, "levee_requests_total", map[string]string{"route": "shop", "code": "200"}); got != 4 {
		t.Errorf("levee_requests_total{code=200} %v, want 4", got)
	}
	if logs := th.logs.String(); !strings.Contains(logs, `"proto":"HTTP/2.0"`) || !strings.Contains(logs, `"route":"shop"`) {
		t.Errorf("access log has no HTTP/2 line for the route:\n%s", logs)
	}

	// The breaker trips and answers over h2 as over h1.
	b := tlsRoute("cart", a.backend())
	b.Hosts = []string{"cart.test"}
	th.set(config.SourceDocker, withBreaker(b, breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 10 * time.Second}))
	th.send(th.h2, th.secure.URL, http.MethodGet, "cart.test", "/fail")
	th.send(th.h2, th.secure.URL, http.MethodGet, "cart.test", "/fail")
	resp := th.send(th.h2, th.secure.URL, http.MethodGet, "cart.test", "/")
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticCircuitOpen || resp.Header.Get("Retry-After") == "" {
		t.Errorf("open breaker over h2: %d %v", resp.StatusCode, resp.Header)
	}
}

// HSTS is sent only over TLS, even when the route also serves on a plain
// listener it names.
func TestHSTSOnlyOverTLS(t *testing.T) {
	th := newTLSHarness(t)
	a := newBackend(t, "a")
	e := tlsRoute("shop", a.backend())
	e.Listeners = []string{"web", "websecure"}
	th.set(config.SourceDocker, e)
	if resp := th.send(http.DefaultClient, th.plain, http.MethodGet, "shop.test", "/"); resp.StatusCode != 200 || resp.Header.Get("Strict-Transport-Security") != "" {
		t.Errorf("plain: %d HSTS %q", resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
	}
	if resp := th.send(th.h2, th.secure.URL, http.MethodGet, "shop.test", "/"); resp.StatusCode != 200 || resp.Header.Get("Strict-Transport-Security") == "" {
		t.Errorf("TLS: %d HSTS %q", resp.StatusCode, resp.Header.Get("Strict-Transport-Security"))
	}
}

// tls.hsts.includeSubDomains and tls.hsts.preload add their directives
// to the header (RFC 6797 6.1.2).
func TestHSTSDirectives(t *testing.T) {
	th := newTLSHarness(t)
	a := newBackend(t, "a")
	e := tlsRoute("shop", a.backend())
	e.TLS.HSTSIncludeSubdomains, e.TLS.HSTSPreload = true, true
	th.set(config.SourceDocker, e)
	resp := th.send(th.h2, th.secure.URL, http.MethodGet, "shop.test", "/")
	if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=31536000; includeSubDomains; preload" {
		t.Errorf("HSTS %q", got)
	}
}

// WebSocket keeps working over HTTP/1.1 on a TLS listener (ALPN
// http/1.1): the upgrade is tunnelled through net/http's TLS server.
func TestWebSocketOverTLSListener(t *testing.T) {
	th := newTLSHarness(t)
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw)
	}))
	defer be.Close()
	host, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	e := tlsRoute("ws", config.Backend{Address: host, Port: p, Weight: 1})
	th.set(config.SourceDocker, e)
	conn, err := tls.Dial("tcp", th.secure.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "GET /chat HTTP/1.1\r\nHost: ws.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := conn.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(br, buf); err != nil || string(buf) != "hello" {
		t.Fatalf("echo: %q %v", buf, err)
	}
}

// A request body of unknown length (an h2 stream without content-length)
// reaches the backend whole, and the backend's body comes back.
func TestHTTP2StreamedBody(t *testing.T) {
	th := newTLSHarness(t)
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d %s", len(b), r.Header.Get("X-Forwarded-Proto"))
	}))
	defer be.Close()
	host, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	th.set(config.SourceDocker, tlsRoute("up", config.Backend{Address: host, Port: p, Weight: 1}))
	pr, pw := io.Pipe()
	go func() {
		for range 100 {
			pw.Write(make([]byte, 1000))
		}
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, th.secure.URL+"/upload", pr)
	req.Host = "up.test"
	resp, err := th.h2.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || string(b) != "100000 https" {
		t.Errorf("%s %d %q, want HTTP/2 200 \"100000 https\"", resp.Proto, resp.StatusCode, b)
	}
}
