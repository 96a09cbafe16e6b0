package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// Regression tests of the HTTP safety rules (docs/operations.md, "Safety
// rules of the data plane"). `make test` runs them on every combination of
// server and backend client (LEVEE_TEST_SERVER, LEVEE_TEST_CLIENT);
// e2e/conformance runs the same rules through the binary.

// scriptedBackend answers each request it reads with answer(path), written
// in one write, and counts its connections.
func scriptedBackend(t *testing.T, conns *atomic.Int64, answer func(path string) string) config.Backend {
	return rawBackend(t, func(c net.Conn) {
		conns.Add(1)
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, req.Body)
			if _, err := io.WriteString(c, answer(req.URL.Path)); err != nil {
				return
			}
		}
	})
}

func answerOK(body string) string {
	return "HTTP/1.1 200 OK\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n" + body
}

func itoa(n int) string { return strconv.Itoa(n) }

// A backend that writes more than one response, or bytes after a
// response, never has those bytes reach the next client: the connection
// they came on is not reused.
func TestLeftoverBackendBytesNeverReachAnotherClient(t *testing.T) {
	cases := map[string]func(path string) string{
		"two responses in one write": func(p string) string {
			return answerOK(p) + answerOK("/admin-secret")
		},
		"bytes after Content-Length": func(p string) string {
			return answerOK(p) + "HTTP/1.1 200 OK\r\n"
		},
		"204 with a body": func(p string) string {
			if p == "/first" {
				return "HTTP/1.1 204 No Content\r\n\r\n" + answerOK("/admin-secret")
			}
			return answerOK(p)
		},
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			var conns atomic.Int64
			be := scriptedBackend(t, &conns, answer)
			h := newHarness(t, Options{})
			h.set(config.SourceAPI, ep("web", be))
			h.get("web.test", "/first")
			for i := 0; i < 5; i++ {
				_, body, _ := h.get("web.test", "/next")
				if body != "/next" {
					t.Fatalf("request %d got %q: a leftover of another exchange", i, body)
				}
			}
			if n := conns.Load(); n < 2 {
				t.Fatalf("%d backend connections: the poisoned one was reused", n)
			}
		})
	}
}

// getBodyAsNextRequestBackend counts its connections and the requests
// marked Connection: close. Unlike scriptedBackend, which discards
// bodies, it reads a GET body as the next request, as Python's
// http.server does.
func getBodyAsNextRequestBackend(t *testing.T, conns, closes *atomic.Int64) config.Backend {
	return rawBackend(t, func(c net.Conn) {
		conns.Add(1)
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.Method != http.MethodGet {
				_, _ = io.Copy(io.Discard, req.Body)
			}
			if req.Close {
				closes.Add(1)
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: "+itoa(len(req.URL.Path))+"\r\n\r\n"+req.URL.Path)
				return
			}
			if _, err := io.WriteString(c, answerOK(req.URL.Path)); err != nil {
				return
			}
		}
	})
}

// A body on GET is forwarded with Connection: close: a backend that
// ignores GET bodies and reads the body as a second request cannot hand
// its answer to the next client.
func TestGetBodyIsNeverASecondRequest(t *testing.T) {
	var conns, closes atomic.Int64
	be := getBodyAsNextRequestBackend(t, &conns, &closes)
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	smuggled := "GET /admin HTTP/1.1\r\nHost: web.test\r\n\r\n"
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/public", strings.NewReader(smuggled))
	req.Host = "web.test"
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "/public" {
		t.Fatalf("GET with a body got %q", b)
	}
	for i := 0; i < 3; i++ {
		if _, body, _ := h.get("web.test", "/mine"); body != "/mine" {
			t.Fatalf("next client got %q, the answer to a smuggled request", body)
		}
	}
}

// A body of unknown length on a GET is read before the backend is
// dialled (an HTTP/3 GET's stream may end after its headers): found
// empty, it is no body, and the backend connection is kept for the next
// client; found with bytes, it is forwarded with Connection: close.
func TestGetWithEmptyBodyOfUnknownLengthKeepsTheBackendConnection(t *testing.T) {
	var conns, closes atomic.Int64
	be := getBodyAsNextRequestBackend(t, &conns, &closes)
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	send := func(path, chunks string) {
		t.Helper()
		// A connection each: Levee's front closes after a chunked
		// request (RFC 9112 6.3, operations.md).
		conn := h.dialFront()
		br := bufio.NewReader(conn)
		if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: web.test\r\nTransfer-Encoding: chunked\r\n\r\n"+chunks); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != path {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, b)
		}
	}
	send("/one", "0\r\n\r\n")
	send("/two", "0\r\n\r\n")
	if n, c := conns.Load(), closes.Load(); n != 1 || c != 0 {
		t.Fatalf("two GETs with empty chunked bodies: %d backend connections, %d marked close; want 1 and 0", n, c)
	}
	send("/three", "3\r\nabc\r\n0\r\n\r\n")
	if c := closes.Load(); c != 1 {
		t.Fatalf("a GET with a body was forwarded without Connection: close (%d marked)", c)
	}
}

// A 101 to a request that did not ask for that protocol is a 502, and
// nothing is tunnelled.
func TestUnaskedSwitchingProtocolsIsRefused(t *testing.T) {
	cases := map[string]http.Header{
		"plain GET":           {},
		"websocket asked h2c": {"Connection": {"Upgrade"}, "Upgrade": {"websocket"}},
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			be := rawBackend(t, func(c net.Conn) {
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				upgrade := "h2c"
				if len(hdr) == 0 {
					upgrade = "websocket"
				}
				_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+upgrade+"\r\n\r\n")
				_, _ = io.Copy(io.Discard, c)
			})
			h := newHarness(t, Options{})
			h.set(config.SourceAPI, ep("web", be))
			conn := h.dialFront()
			var head strings.Builder
			head.WriteString("GET / HTTP/1.1\r\nHost: web.test\r\n")
			for k, v := range hdr {
				head.WriteString(k + ": " + v[0] + "\r\n")
			}
			head.WriteString("\r\n")
			_, _ = io.WriteString(conn, head.String())
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(HeaderDiagnostic) != DiagnosticBadUpgrade {
				t.Fatalf("got %d %q, want 502 %s", resp.StatusCode, resp.Header.Get(HeaderDiagnostic), DiagnosticBadUpgrade)
			}
		})
	}
}

// A slow upload is not a slow backend: the backend timeout runs from the
// last byte sent, so two uploads slower than it leave the breaker closed.
func TestSlowUploadDoesNotOpenTheBreaker(t *testing.T) {
	var conns atomic.Int64
	be := scriptedBackend(t, &conns, func(p string) string { return answerOK("stored") })
	h := newHarness(t, Options{})
	e := withBreaker(ep("web", be), breaker.Params{Threshold: 0.5, MinRequests: 2, Cooldown: 10 * time.Second})
	e.BackendTimeout = 200 * time.Millisecond
	h.set(config.SourceAPI, e)
	for i := 0; i < 2; i++ {
		pr, pw := io.Pipe()
		go func() {
			for j := 0; j < 4; j++ {
				if _, err := pw.Write(make([]byte, 32<<10)); err != nil {
					return
				}
				time.Sleep(150 * time.Millisecond) // the client's pace, not synchronisation
			}
			pw.Close()
		}()
		resp := h.do(http.MethodPost, "web.test", "/upload", pr)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "stored" {
			t.Fatalf("slow upload %d: %d %q (%s)", i, resp.StatusCode, b, resp.Header.Get(HeaderDiagnostic))
		}
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("breaker %s after two slow uploads to a healthy backend", s)
	}
}

// A head announcing a small body that never comes holds no backend
// connection, and ends in 408 once the body timeout passes; the backend
// is not blamed.
func TestAnnouncedBodyNeverSentIs408WithoutBackend(t *testing.T) {
	var conns atomic.Int64
	be := scriptedBackend(t, &conns, func(p string) string { return answerOK(p) })
	h := newHarness(t, Options{RequestBodyTimeout: 300 * time.Millisecond})
	h.set(config.SourceAPI, withBreaker(ep("web", be), breaker.Params{Threshold: 0.5, MinRequests: 1, Cooldown: 10 * time.Second}))
	conn := h.dialFront()
	_, _ = io.WriteString(conn, "POST /up HTTP/1.1\r\nHost: web.test\r\nContent-Length: 100\r\n\r\nab")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout || resp.Header.Get(HeaderDiagnostic) != DiagnosticClientTimeout || !resp.Close {
		t.Fatalf("got %d %q close=%v, want 408 %s and the connection closed", resp.StatusCode, resp.Header.Get(HeaderDiagnostic), resp.Close, DiagnosticClientTimeout)
	}
	if n := conns.Load(); n != 0 {
		t.Fatalf("%d backend connections for a body that never came", n)
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("breaker %s: a slow client was blamed on the backend", s)
	}
	if v := metricValue(t, h, "levee_client_errors_total", map[string]string{"reason": clientErrorBodyTimeout}); v != 1 {
		t.Fatalf("levee_client_errors_total{reason=body_timeout} = %v, want 1", v)
	}
}

// A backend that stalls in the middle of a body is cut off after the
// backend body timeout: the client sees a truncated response.
func TestStalledBackendBodyIsCutShort(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	be := rawBackend(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
		<-release
	})
	h := newHarness(t, Options{BackendBodyTimeout: 300 * time.Millisecond})
	h.set(config.SourceAPI, ep("web", be))
	resp := h.do(http.MethodGet, "web.test", "/", nil)
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a cut-short body read as complete")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the client still waits 5 s after the backend body stalled")
	}
	resp.Body.Close()
}

// Interim answers (103 Early Hints) reach the client before the final one;
// announced trailers follow the body; a 204 carries no Content-Length.
func TestInterimTrailersAnd204(t *testing.T) {
	be := rawBackend(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			switch req.URL.Path {
			case "/hints":
				_, _ = io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"+answerOK("final"))
			case "/trailers":
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n2\r\nok\r\n0\r\nX-Checksum: abc\r\n\r\n")
			default:
				_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")
			}
		}
	})
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))

	var hints []string
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/hints", nil)
	req.Host = "web.test"
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, hdr textproto.MIMEHeader) error {
			hints = append(hints, itoa(code)+" "+hdr.Get("Link"))
			return nil
		},
	}))
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "final" || len(hints) != 1 || hints[0] != "103 </a.css>; rel=preload" {
		t.Fatalf("got %q after interim answers %q, want one 103 with its Link", b, hints)
	}

	resp = h.do(http.MethodGet, "web.test", "/trailers", nil)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" || resp.Trailer.Get("X-Checksum") != "abc" {
		t.Fatalf("body %q trailers %v, want X-Checksum: abc", b, resp.Trailer)
	}

	conn := h.dialFront()
	_, _ = io.WriteString(conn, "GET /nc HTTP/1.1\r\nHost: web.test\r\n\r\n")
	var head strings.Builder
	br := bufio.NewReader(conn)
	for !strings.HasSuffix(head.String(), "\r\n\r\n") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the 204 head %q: %v", head.String(), err)
		}
		head.WriteString(line)
	}
	if !strings.HasPrefix(head.String(), "HTTP/1.1 204") || strings.Contains(strings.ToLower(head.String()), "content-length") {
		t.Fatalf("204 head %q: want no Content-Length", head.String())
	}
}
