package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// rawExchange writes a request exactly as given to the proxy and reads one
// response, failing the test if none arrives within d.
func rawExchange(t *testing.T, h *harness, request string, d time.Duration) *http.Response {
	t.Helper()
	conn := h.dialFront()
	_ = conn.SetDeadline(time.Now().Add(d))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no response within %s to %q: %v", d, request, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// A client that sends a malformed chunked body gets 400 at once, and the
// route's breaker and the backend's ejection state never hear of it: one
// client must not be able to take a healthy route out of service.
func TestMalformedRequestBodyIsTheClientsFault(t *testing.T) {
	for _, attempts := range []int{1, 3} { // streamed, and buffered for retries
		h := newHarness(t, Options{EjectAfter: 2})
		a := newBackend(t, "a")
		e := withBreaker(ep("web", a.backend()), ratioParams())
		e.Retry.Attempts = attempts
		h.set(config.SourceAPI, e)
		const bad = "POST / HTTP/1.1\r\nHost: web.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"
		for i := 0; i < 6; i++ {
			// Far below the backend header timeout: the exchange must
			// not wait for a backend that can never answer.
			resp := rawExchange(t, h, bad, 5*time.Second)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderDiagnostic) != DiagnosticBadRequestBody {
				t.Fatalf("attempts=%d: got %d %q, want 400 %s", attempts, resp.StatusCode, resp.Header.Get(HeaderDiagnostic), DiagnosticBadRequestBody)
			}
		}
		st, _ := h.r.Breaker("web")
		if st.State != "closed" || st.Failures != 0 {
			t.Fatalf("attempts=%d: breaker %s with %d failures, want closed with none", attempts, st.State, st.Failures)
		}
		if code, _, _ := h.get("web.test", "/"); code != http.StatusOK {
			t.Fatalf("attempts=%d: a good request after the bad ones got %d (backend ejected?)", attempts, code)
		}
	}
}

// Paths with dot segments or an encoded slash are refused before routing:
// the route would be chosen by a prefix the backend may resolve away.
func TestUnsafePathsAreRefused(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	api := ep("api", a.backend())
	api.Path = "/api"
	h.set(config.SourceAPI, api, ep("root", a.backend()))
	for _, path := range []string{"/api/../admin", "/api/./x", "/api/%2e%2e/admin", "/api/%2E%2E", "/api%2Fadmin", "/a%5Cb", "/.."} {
		resp := rawExchange(t, h, "GET "+path+" HTTP/1.1\r\nHost: root.test\r\n\r\n", 5*time.Second)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderDiagnostic) != DiagnosticBadPath {
			t.Errorf("%s: got %d %q, want 400 %s", path, resp.StatusCode, resp.Header.Get(HeaderDiagnostic), DiagnosticBadPath)
		}
	}
	if n := a.hits.Load(); n != 0 {
		t.Fatalf("the backend saw %d refused requests", n)
	}
	for _, path := range []string{"/.well-known/acme", "/a..b/c", "/files/x.tar.gz", "/api/a%20b"} {
		resp := rawExchange(t, h, "GET "+path+" HTTP/1.1\r\nHost: root.test\r\n\r\n", 5*time.Second)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: got %d, want 200", path, resp.StatusCode)
		}
	}
}

// A response without Content-Type reaches the client without one: the
// proxy does not let net/http sniff and invent it.
func TestNoContentTypeInvented(t *testing.T) {
	be := rawBackend(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n<html>hi</html")
	})
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	code, body, resp := h.get("web.test", "/")
	if code != http.StatusOK || body != "<html>hi</html" {
		t.Fatalf("got %d %q", code, body)
	}
	if ct, ok := resp.Header["Content-Type"]; ok {
		t.Fatalf("Content-Type %q added to a response that had none", ct)
	}
}

// A request with both Content-Length and Transfer-Encoding is read as
// chunked and its connection is closed after the answer, so a second
// request hidden in the body (for a proxy in front that framed by
// Content-Length) is never served.
func TestContentLengthWithTransferEncodingClosesTheConnection(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceAPI, ep("web", a.backend()))
	conn := h.dialFront()
	io.WriteString(conn, "POST /x HTTP/1.1\r\nHost: web.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: web.test\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !resp.Close {
		t.Fatalf("first answer %d, close %v: want 200 and the connection closed", resp.StatusCode, resp.Close)
	}
	if _, err := http.ReadResponse(br, nil); err == nil {
		t.Fatal("the request hidden in the body was answered")
	}
	if last := a.last(); last == nil || last.URL.Path != "/x" || a.hits.Load() != 1 {
		t.Fatalf("backend saw %d requests, last %v; want only /x", a.hits.Load(), last)
	}

	// Levee's own answers (here: no route) close such a connection too.
	conn2 := h.dialFront()
	io.WriteString(conn2, "POST /x HTTP/1.1\r\nHost: nowhere.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"+
		"0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: web.test\r\n\r\n")
	br2 := bufio.NewReader(conn2)
	resp2, err := http.ReadResponse(br2, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != http.StatusNotFound || !resp2.Close {
		t.Fatalf("own answer %d, close %v: want 404 and the connection closed", resp2.StatusCode, resp2.Close)
	}
	if _, err := http.ReadResponse(br2, nil); err == nil || a.hits.Load() != 1 {
		t.Fatalf("the request hidden behind a 404 was served (backend hits %d)", a.hits.Load())
	}
}

// Headers a backend names in `Connection: close, X-Hop` are hop-by-hop and
// never reach the client, although net/http drops the Connection header.
func TestResponseHeadersNamedByConnectionCloseAreDropped(t *testing.T) {
	be := rawBackend(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nX-App: yes\r\nContent-Length: 2\r\n\r\nok")
	})
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	code, body, resp := h.get("web.test", "/")
	if code != http.StatusOK || body != "ok" {
		t.Fatalf("got %d %q", code, body)
	}
	if stdlibClient() {
		// The difference of --backend-client=stdlib: net/http's Transport
		// deletes a `Connection: close` header before the proxy can see
		// what it named, so X-Hop passes (as through httputil's
		// ReverseProxy); docs/operations.md, "Differences from net/http".
		if resp.Header.Get("X-App") != "yes" || resp.Header.Get("X-Hop") != "1" {
			t.Fatalf("headers %v: want X-App kept and, with net/http's Transport, X-Hop passed", resp.Header)
		}
		return
	}
	if resp.Header.Get("X-Hop") != "" || resp.Header.Get("X-App") != "yes" {
		t.Fatalf("headers %v: want X-Hop dropped and X-App kept", resp.Header)
	}
}
