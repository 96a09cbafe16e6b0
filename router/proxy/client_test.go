package proxy

import (
	"bufio"
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

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// rawBackend serves each connection with fn, for backends that misbehave
// at the connection level.
func rawBackend(t *testing.T, fn func(net.Conn)) config.Backend {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fn(c)
			}()
		}
	}()
	return config.Backend{Address: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, Weight: 1}
}

// A backend that closes every connection after one response, without
// saying so: a reused connection is dead. GETs are sent again on a fresh
// one; the pool notices the close of an idle connection before sending.
func TestH1ClosedKeepAliveConnection(t *testing.T) {
	var conns atomic.Int64
	closed := make(chan struct{}, 16)
	be := rawBackend(t, func(c net.Conn) {
		conns.Add(1)
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.Close()
		select {
		case closed <- struct{}{}:
		default:
		}
	})
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	for i := 0; i < 5; i++ {
		if code, body, _ := h.get("web.test", "/"); code != 200 || body != "ok" {
			t.Fatalf("GET %d: %d %q", i, code, body)
		}
	}
	if conns.Load() < 5 {
		t.Fatalf("%d connections for 5 requests", conns.Load())
	}
	// A POST on a pooled connection the backend has closed is not lost
	// once the connection idled long enough to be checked before reuse.
	for len(closed) > 0 {
		<-closed
	}
	h.get("web.test", "/")
	<-closed // the backend closed the connection now pooled
	eventually(t, "a pooled connection", func() bool {
		h.p.transports.mu.Lock()
		defer h.p.transports.mu.Unlock()
		for _, tr := range h.p.transports.m {
			h1, ok := tr.(*client.Transport)
			if !ok {
				return true // LEVEE_TEST_CLIENT=stdlib: net/http's pool
			}
			if h1.IdleConns(be.Address+":"+strconv.Itoa(be.Port)) > 0 {
				return true
			}
		}
		return false
	})
	// What is tested is time-based: the connection must have idled past
	// the threshold after which it is checked.
	time.Sleep(client.PeekAfterIdle + 50*time.Millisecond)
	resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("data"))
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST on a stale pooled connection: %d", resp.StatusCode)
	}
}

// A pooled connection that idled past the check before reuse, and that
// the backend kept open, is reused: the check (a peek) is not failed by
// the read deadline the last exchange left on the connection.
func TestH1ReusesAConnectionIdlePastThePeek(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	port, _ := strconv.Atoi(srv.URL[strings.LastIndexByte(srv.URL, ':')+1:])
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", config.Backend{Address: "127.0.0.1", Port: port, Weight: 1}))
	for i := 0; i < 2; i++ {
		if i > 0 {
			// What is tested is time-based: the connection must have
			// idled past the threshold after which it is checked.
			time.Sleep(client.PeekAfterIdle + 50*time.Millisecond)
		}
		if code, _, _ := h.get("web.test", "/"); code != 200 {
			t.Fatalf("GET %d: %d", i, code)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d backend connections for 2 requests %s apart, want 1 (the idle one reused)", n, client.PeekAfterIdle+50*time.Millisecond)
	}
}

func TestH1ReusesConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	port, _ := strconv.Atoi(srv.URL[strings.LastIndexByte(srv.URL, ':')+1:])
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", config.Backend{Address: "127.0.0.1", Port: port, Weight: 1}))
	for i := 0; i < 20; i++ {
		if code, _, _ := h.get("web.test", "/"); code != 200 {
			t.Fatalf("GET %d: %d", i, code)
		}
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("body"))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("%d backend connections for 40 sequential requests, want 1 (keep-alive)", n)
	}
}

func TestH1SkipsInformationalResponses(t *testing.T) {
	be := rawBackend(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n")
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
	})
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	if code, body, _ := h.get("web.test", "/"); code != 200 || body != "final" {
		t.Fatalf("got %d %q", code, body)
	}
}

// A backend that answers before reading a large upload does not hang the
// proxy, and the client reads that answer: the connection is closed
// gracefully, not reset under the answer. The race with a reset is lost
// in a fraction of tries, so several are made.
func TestH1EarlyAnswerDuringUpload(t *testing.T) {
	h := newHarness(t, Options{})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	}))
	defer be.Close()
	port, _ := strconv.Atoi(be.URL[strings.LastIndexByte(be.URL, ':')+1:])
	h.set(config.SourceAPI, ep("web", config.Backend{Address: "127.0.0.1", Port: port, Weight: 1}))
	for try := 0; try < 8; try++ {
		pr, pw := io.Pipe()
		go func() {
			chunk := make([]byte, 64<<10)
			for i := 0; i < 256; i++ { // 16 MiB, unless the proxy stops reading
				if _, err := pw.Write(chunk); err != nil {
					return
				}
			}
			pw.Close()
		}()
		resp := h.do(http.MethodPost, "web.test", "/", pr)
		resp.Body.Close()
		pw.CloseWithError(io.ErrClosedPipe)
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("try %d: got %d", try, resp.StatusCode)
		}
	}
}

func TestH1ResponseFraming(t *testing.T) {
	// Both framings from the backend: chunked wins and no Content-Length
	// reaches the client.
	be := rawBackend(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
	})
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	conn := h.dialFront()
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: web.test\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "hello" {
		t.Fatalf("body %q", body)
	}
	if resp.ContentLength != -1 && resp.ContentLength != 5 {
		t.Fatalf("client got Content-Length %d for a 5-byte body", resp.ContentLength)
	}
}

// Every proxy test also passes on net/http's transport (the fallback).
func TestStandardTransportFallback(t *testing.T) {
	h := newHarness(t, Options{StandardTransport: true})
	a := newBackend(t, "a")
	e := ep("web", a.backend(), deadBackend(t))
	e.Retry.Attempts = 2
	h.set(config.SourceAPI, e)
	for i := 0; i < 4; i++ {
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("x"))
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %d: %d", i, resp.StatusCode)
		}
	}
	a.mode.Store(modeHang)
	e.BackendTimeout = 50 * time.Millisecond
	e.Backends = e.Backends[:1]
	h.set(config.SourceAPI, e)
	if code, _, _ := h.get("web.test", "/"); code != http.StatusGatewayTimeout {
		t.Fatalf("timeout on the standard transport: %d", code)
	}
}

func TestH1BoundsResponseHeaders(t *testing.T) {
	be := rawBackend(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Junk: " + strings.Repeat("j", 8000) + "\r\n"
		for i := 0; i < 200; i++ { // 1.6 MB of headers
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
		io.WriteString(c, "\r\n")
	})
	h := newHarness(t, Options{})
	h.set(config.SourceAPI, ep("web", be))
	if code, _, resp := h.get("web.test", "/"); code != http.StatusBadGateway || resp.Header.Get("X-Junk") != "" {
		t.Fatalf("oversized response head: %d", code)
	}
}
