package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

func TestProxyNoRouteIs404(t *testing.T) {
	h := newHarness(t, Options{})
	code, _, resp := h.get("nowhere.test", "/")
	if code != http.StatusNotFound || resp.Header.Get(HeaderDiagnostic) != DiagnosticNoRoute {
		t.Fatalf("got %d %q, want 404 no-route", code, resp.Header.Get(HeaderDiagnostic))
	}
}

func TestProxyRouteWithoutBackendIs503(t *testing.T) {
	h := newHarness(t, Options{})
	zero := newBackend(t, "zero").backend()
	zero.Weight = 0
	h.set(config.SourceAPI, ep("empty"), ep("weightless", zero))
	for _, host := range []string{"empty.test", "weightless.test"} {
		code, _, resp := h.get(host, "/")
		if code != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticNoHealthyBackend {
			t.Fatalf("%s: got %d %q, want 503 no-healthy-backend", host, code, resp.Header.Get(HeaderDiagnostic))
		}
	}
}

// A backend that refuses the connection is not up (a single replica
// restarting): 503 with a Retry-After, not a 502.
func TestProxyRefusingBackendIs503WithRetryAfter(t *testing.T) {
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("dead", deadBackend(t)))
	for i := 0; i < 3; i++ { // the first refusal ejects it; the next fail open onto it again
		code, _, resp := h.get("dead.test", "/")
		if code != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticNoHealthyBackend ||
			resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("request %d: got %d %q Retry-After %q, want 503 no-healthy-backend with Retry-After 1",
				i, code, resp.Header.Get(HeaderDiagnostic), resp.Header.Get("Retry-After"))
		}
	}
}

// A backend that accepts and closes without answering broke the exchange:
// 502 backend-unreachable.
func TestProxyBackendClosingWithoutAnswerIs502(t *testing.T) {
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("dead", rawBackend(t, func(c net.Conn) { _, _ = http.ReadRequest(bufio.NewReader(c)) })))
	code, _, resp := h.get("dead.test", "/")
	if code != http.StatusBadGateway || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendUnreachable {
		t.Fatalf("got %d %q, want 502 backend-unreachable", code, resp.Header.Get(HeaderDiagnostic))
	}
}

func TestProxyBackendTimeoutIs504(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "slow")
	b.mode.Store(modeHang)
	e := ep("slow", b.backend())
	e.BackendTimeout = 100 * time.Millisecond
	h.set(config.SourceAPI, e)
	code, _, resp := h.get("slow.test", "/")
	if code != http.StatusGatewayTimeout || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendTimeout {
		t.Fatalf("got %d %q, want 504 backend-timeout", code, resp.Header.Get(HeaderDiagnostic))
	}
}

func TestProxyHeaders(t *testing.T) {
	h := newHarness(t, Options{})
	var seen *http.Request
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Clone(r.Context())
		w.Header().Set("Connection", "X-Secret")
		w.Header().Set("X-Secret", "hop")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-App", "yes")
		w.Header().Add("Set-Cookie", "a=1")
		w.Header().Add("Set-Cookie", "b=2")
		io.WriteString(w, "hello")
	}))
	defer be.Close()
	host, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	var p int
	fmt.Sscan(port, &p)
	h.set(config.SourceAPI, ep("hdr", config.Backend{Address: host, Port: p, Weight: 1}))

	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/a/b?q=1&r=%2F", nil)
	req.Host = "HDR.test:8080"
	req.Header.Set("Connection", "X-Drop-Me")
	req.Header.Set("X-Drop-Me", "1")
	req.Header.Set("Proxy-Authorization", "secret")
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	req.Header.Set("X-Forwarded-Proto", "https") // an edge proxy sets its own
	req.Header.Set("X-Keep", "kept")
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()

	if string(body) != "hello" || resp.StatusCode != 200 {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if seen.Host != "HDR.test:8080" {
		t.Errorf("Host = %q, want the client's", seen.Host)
	}
	if seen.URL.RequestURI() != "/a/b?q=1&r=%2F" {
		t.Errorf("request URI = %q", seen.URL.RequestURI())
	}
	for k, want := range map[string]string{
		// The client is not a trusted proxy: what it claims is replaced.
		"X-Forwarded-For":     "127.0.0.1",
		"X-Forwarded-Proto":   "http",
		"X-Forwarded-Host":    "HDR.test:8080",
		"X-Keep":              "kept",
		"X-Drop-Me":           "",
		"Proxy-Authorization": "",
		"User-Agent":          "Go-http-client/1.1", // the client's, not added by the proxy
	} {
		if got := seen.Header.Get(k); got != want {
			t.Errorf("backend saw %s = %q, want %q", k, got, want)
		}
	}
	if got := seen.Header.Values("Connection"); len(got) != 0 {
		t.Errorf("backend saw Connection %q", got)
	}
	if resp.Header.Get("X-Secret") != "" || resp.Header.Get("Keep-Alive") != "" {
		t.Errorf("hop-by-hop response headers leaked: %v", resp.Header)
	}
	if resp.Header.Get("X-App") != "yes" || len(resp.Header.Values("Set-Cookie")) != 2 {
		t.Errorf("end-to-end response headers lost: %v", resp.Header)
	}
}

// Behind a trusted load balancer its X-Forwarded-* are kept (For is
// appended to); a header it did not set is still filled in.
func TestProxyTrustedProxyHeadersAreKept(t *testing.T) {
	h := newHarness(t, Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	b := newBackend(t, "a")
	h.set(config.SourceAPI, ep("hdr", b.backend()))
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
	req.Host = "hdr.test"
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	seen := b.last()
	for k, want := range map[string]string{
		"X-Forwarded-For":   "203.0.113.9, 127.0.0.1",
		"X-Forwarded-Proto": "https",
		"X-Forwarded-Host":  "hdr.test",
	} {
		if got := seen.Header.Get(k); got != want {
			t.Errorf("backend saw %s = %q, want %q", k, got, want)
		}
	}
}

func TestProxyNoUserAgentAdded(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "ua")
	h.set(config.SourceAPI, ep("ua", b.backend()))
	conn := h.dialFront()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: ua.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ua, ok := b.last().Header["User-Agent"]; ok {
		t.Fatalf("backend saw User-Agent %q, the client sent none", ua)
	}
}

func TestProxyStripAndAddPrefix(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "rw")
	e := route("rw", "/api", "rw.test")
	e.Backends = []config.Backend{b.backend()}
	e.StripPrefix = true
	e.AddPrefix = "/v2"
	h.set(config.SourceAPI, e)
	for in, want := range map[string]string{"/api/users?x=1": "/v2/users?x=1", "/api": "/v2/"} {
		if code, _, _ := h.get("rw.test", in); code != 200 {
			t.Fatalf("%s: status %d", in, code)
		}
		if got := b.last().URL.RequestURI(); got != want {
			t.Errorf("%s forwarded as %q, want %q", in, got, want)
		}
	}
}

// A large body that the backend writes slowly reaches the client while the
// backend is still writing: the proxy does not buffer it.
func TestProxyStreamsSlowLargeResponse(t *testing.T) {
	for _, withLength := range []bool{false, true} {
		t.Run(fmt.Sprintf("content-length=%v", withLength), func(t *testing.T) {
			h := newHarness(t, Options{})
			const chunk = 256 << 10
			const chunks = 8
			next := make(chan struct{})
			be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if withLength {
					w.Header().Set("Content-Length", fmt.Sprint(chunk*chunks))
				}
				buf := []byte(strings.Repeat("x", chunk))
				for i := 0; i < chunks; i++ {
					if i > 0 {
						select {
						case <-next: // the client has seen the previous chunk
						case <-time.After(10 * time.Second):
							return
						}
					}
					w.Write(buf)
					w.(http.Flusher).Flush()
				}
			}))
			defer be.Close()
			host, port, _ := net.SplitHostPort(be.Listener.Addr().String())
			var p int
			fmt.Sscan(port, &p)
			h.set(config.SourceAPI, ep("big", config.Backend{Address: host, Port: p, Weight: 1}))

			resp := h.do(http.MethodGet, "big.test", "/", nil)
			defer resp.Body.Close()
			total := 0
			buf := make([]byte, 64<<10)
			for i := 0; i < chunks; i++ {
				// Each chunk must arrive before the backend may write the
				// next one; a buffering proxy would deadlock here.
				want := (i + 1) * chunk
				if i == chunks-1 {
					want = chunk * chunks
				}
				for total < want-(64<<10) { // allow a little in flight
					n, err := resp.Body.Read(buf)
					total += n
					if err != nil {
						t.Fatalf("read after %d bytes: %v", total, err)
					}
				}
				if i < chunks-1 {
					next <- struct{}{}
				}
			}
			rest, err := io.Copy(io.Discard, resp.Body)
			if err != nil || total+int(rest) != chunk*chunks {
				t.Fatalf("got %d bytes (%v), want %d", total+int(rest), err, chunk*chunks)
			}
		})
	}
}

// The request body streams to the backend: the backend sees the first
// part while the client is still sending.
func TestProxyStreamsRequestBody(t *testing.T) {
	h := newHarness(t, Options{})
	gotFirst := make(chan struct{})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 5)
		if _, err := io.ReadFull(r.Body, buf); err != nil || string(buf) != "first" {
			http.Error(w, "bad first part", 400)
			return
		}
		close(gotFirst)
		rest, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s%s", buf, rest)
	}))
	defer be.Close()
	host, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	var p int
	fmt.Sscan(port, &p)
	h.set(config.SourceAPI, ep("up", config.Backend{Address: host, Port: p, Weight: 1}))

	pr, pw := io.Pipe()
	done := make(chan string, 1)
	go func() {
		resp := h.do(http.MethodPost, "up.test", "/", pr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	pw.Write([]byte("first"))
	select {
	case <-gotFirst:
	case <-time.After(10 * time.Second):
		t.Fatal("the backend did not see the first part before the body ended: the proxy buffers")
	}
	pw.Write([]byte("-second"))
	pw.Close()
	if got := <-done; got != "first-second" {
		t.Fatalf("backend echoed %q", got)
	}
}

func TestProxyWebSocketEcho(t *testing.T) {
	h := newHarness(t, Options{})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") || !strings.EqualFold(r.Header.Get("Connection"), "upgrade") {
			http.Error(w, "not an upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		io.Copy(conn, brw) // echo until the client closes
	}))
	defer be.Close()
	host, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	var p int
	fmt.Sscan(port, &p)
	h.set(config.SourceAPI, withBreaker(ep("ws", config.Backend{Address: host, Port: p, Weight: 1}), breaker.Params{Threshold: 0.5, MinRequests: 1}))

	conn := h.dialFront()
	fmt.Fprintf(conn, "GET /chat HTTP/1.1\r\nHost: ws.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols || !strings.EqualFold(resp.Header.Get("Upgrade"), "websocket") {
		t.Fatalf("got %d %v", resp.StatusCode, resp.Header)
	}
	for _, msg := range []string{"hello", "levee"} {
		conn.Write([]byte(msg))
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(br, buf); err != nil || string(buf) != msg {
			t.Fatalf("echo %q: got %q, %v", msg, buf, err)
		}
	}
	// The upgrade was judged by its 101, while the connection is still open.
	if st := routeGuard(t, h, "ws").Breaker().Stats(); st.Successes != 1 {
		t.Fatalf("breaker after the upgrade: %+v, want one success", st)
	}
}

// net/http's server parses the request; the proxy never forwards both
// framings of a body.
func TestProxyNeverForwardsContentLengthAndTransferEncoding(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "smuggle")
	h.set(config.SourceAPI, ep("smuggle", b.backend()))
	conn := h.dialFront()
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: smuggle.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusBadRequest {
		return // rejected outright: safe
	}
	last := b.last()
	if last == nil {
		t.Fatalf("status %d and nothing reached the backend", resp.StatusCode)
	}
	if last.Header.Get("Content-Length") != "" && len(last.TransferEncoding) > 0 {
		t.Fatalf("backend got both Content-Length and Transfer-Encoding")
	}
}

func TestProxyRoundRobinsAcrossBackends(t *testing.T) {
	h := newHarness(t, Options{})
	a, b := newBackend(t, "a"), newBackend(t, "b")
	h.set(config.SourceAPI, ep("rr", a.backend(), b.backend()))
	seen := map[string]int{}
	for i := 0; i < 10; i++ {
		_, _, resp := h.get("rr.test", "/")
		seen[resp.Header.Get("X-Backend")]++
	}
	if seen["a"] != 5 || seen["b"] != 5 {
		t.Fatalf("distribution %v, want 5/5", seen)
	}
}

func TestMergeTwoSources(t *testing.T) {
	h := newHarness(t, Options{})
	d, a := newBackend(t, "docker"), newBackend(t, "api")
	h.set(config.SourceDocker, ep("web", d.backend()))
	h.set(config.SourceAPI, ep("shop", a.backend()))
	if _, body, _ := h.get("web.test", "/"); body != "ok from docker" {
		t.Fatalf("web: %q", body)
	}
	if _, body, _ := h.get("shop.test", "/"); body != "ok from api" {
		t.Fatalf("shop: %q", body)
	}
	// Replacing one source leaves the other alone.
	h.set(config.SourceDocker)
	if _, body, _ := h.get("shop.test", "/"); body != "ok from api" {
		t.Fatalf("shop after docker emptied: %q", body)
	}
	ids := []string{}
	for _, es := range h.r.Entrypoints() {
		ids = append(ids, es.Entrypoint.ID+"/"+fmt.Sprint(es.Removed))
	}
	if strings.Join(ids, ",") != "shop/false,web/true" {
		t.Fatalf("entrypoints %v: web should linger as removed for the grace period", ids)
	}
}

func TestProxyRefusesCONNECT(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "b")
	h.set(config.SourceAPI, ep("b", b.backend()))
	conn := h.dialFront()
	fmt.Fprintf(conn, "CONNECT b.test:443 HTTP/1.1\r\nHost: b.test:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusMethodNotAllowed || b.hits.Load() != 0 {
		t.Fatalf("CONNECT: %d, backend hits %d", resp.StatusCode, b.hits.Load())
	}
}
