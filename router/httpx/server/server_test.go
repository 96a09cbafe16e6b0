package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// start serves handler on a loopback port until the test ends.
func start(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// client is a raw connection to the server with a reader for its answers.
type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *client) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, raw); err != nil {
		c.t.Fatalf("writing %q: %v", raw, err)
	}
}

// answer reads one response with its body.
func (c *client) answer(method string) (*http.Response, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("reading the answer: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading the body: %v", err)
	}
	return resp, string(b)
}

// closed reports whether the server closed the connection (EOF before any
// further byte).
func (c *client) closed() bool {
	c.t.Helper()
	_, err := c.br.ReadByte()
	return err == io.EOF || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// echo answers with the method, target, Host and the body it read.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%s %s %s %q", r.Method, r.RequestURI, r.Host, b)
})

func TestKeepAliveAndPipelining(t *testing.T) {
	addr := start(t, &Server{Handler: echo})
	c := dial(t, addr)
	c.send("GET /one HTTP/1.1\r\nHost: a.test\r\n\r\n")
	resp, body := c.answer("GET")
	if resp.StatusCode != 200 || body != `GET /one a.test ""` || resp.ContentLength != int64(len(body)) || resp.Close {
		t.Fatalf("first: %d %q CL %d close %v", resp.StatusCode, body, resp.ContentLength, resp.Close)
	}
	if resp.Header.Get("Date") == "" {
		t.Error("no Date header")
	}
	// Three pipelined requests in one write, one with a body: three
	// answers, in order.
	c.send("POST /two HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /three%20x HTTP/1.1\r\nHost: b.test\r\n\r\n" +
		"GET /four HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
	for _, want := range []string{`POST /two a.test "abc"`, `GET /three%20x b.test ""`, `GET /four a.test ""`} {
		if _, body := c.answer("GET"); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
	if !c.closed() {
		t.Error("the connection stayed open after Connection: close")
	}
}

func TestConnectionCloseAnswered(t *testing.T) {
	addr := start(t, &Server{Handler: echo})
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
	resp, _ := c.answer("GET")
	if !resp.Close {
		t.Error("no Connection: close in the answer")
	}
	if !c.closed() {
		t.Error("connection not closed")
	}
}

func TestHTTP10(t *testing.T) {
	addr := start(t, &Server{Handler: echo})
	c := dial(t, addr)
	c.send("GET /a HTTP/1.0\r\nHost: a.test\r\nConnection: keep-alive\r\n\r\n")
	resp, body := c.answer("GET")
	if body != `GET /a a.test ""` || resp.Header.Get("Connection") != "keep-alive" {
		t.Fatalf("keep-alive: %q Connection %q", body, resp.Header.Get("Connection"))
	}
	c.send("GET /b HTTP/1.0\r\n\r\n")
	if _, body := c.answer("GET"); body != `GET /b  ""` {
		t.Fatalf("no Host: %q", body)
	}
	if !c.closed() {
		t.Error("HTTP/1.0 without keep-alive: connection not closed")
	}
}

func TestResponseFraming(t *testing.T) {
	big := strings.Repeat("x", maxPending+1)
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/small":
			io.WriteString(w, "small")
		case "/big":
			io.WriteString(w, big)
		case "/declared":
			w.Header().Set("Content-Length", "4")
			io.WriteString(w, "four")
		case "/flushed":
			io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			io.WriteString(w, "b")
		case "/trailer":
			io.WriteString(w, "t")
			w.(http.Flusher).Flush()
			w.Header().Set(http.TrailerPrefix+"X-Sum", "42")
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
			_, err := io.WriteString(w, "ignored")
			if !errors.Is(err, http.ErrBodyNotAllowed) {
				panic(fmt.Sprintf("write after 204: %v", err))
			}
		case "/short":
			w.Header().Set("Content-Length", "10")
			io.WriteString(w, "abc")
		case "/inject":
			w.Header().Set("X-Inject", "a\r\nSet-Cookie: evil=1")
		}
	})})
	c := dial(t, addr)
	for _, tc := range []struct {
		path, method, body string
		cl                 int64
		chunked            bool
	}{
		{"/small", "GET", "small", 5, false},
		{"/big", "GET", big, -1, true},
		{"/declared", "GET", "four", 4, false},
		{"/declared", "HEAD", "", 4, false},
		{"/flushed", "GET", "ab", -1, true},
		{"/nocontent", "GET", "", 0, false},
	} {
		c.send(tc.method + " " + tc.path + " HTTP/1.1\r\nHost: a.test\r\n\r\n")
		resp, body := c.answer(tc.method)
		chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
		if body != tc.body || resp.ContentLength != tc.cl || chunked != tc.chunked {
			t.Errorf("%s %s: body %d bytes, CL %d, chunked %v; want %d bytes, %d, %v",
				tc.method, tc.path, len(body), resp.ContentLength, chunked, len(tc.body), tc.cl, tc.chunked)
		}
	}
	c.send("GET /trailer HTTP/1.1\r\nHost: a.test\r\n\r\n")
	resp, body := c.answer("GET")
	if body != "t" || resp.Trailer.Get("X-Sum") != "42" {
		t.Errorf("trailer: body %q, trailer %v", body, resp.Trailer)
	}
	c.send("GET /inject HTTP/1.1\r\nHost: a.test\r\n\r\n")
	resp, _ = c.answer("GET")
	if resp.Header.Get("Set-Cookie") != "" || resp.Header.Get("X-Inject") != "a  Set-Cookie: evil=1" {
		t.Errorf("header injection: X-Inject %q, Set-Cookie %q", resp.Header.Get("X-Inject"), resp.Header.Get("Set-Cookie"))
	}
	// A body shorter than its Content-Length: the client must see the
	// connection end, not a next answer.
	c.send("GET /short HTTP/1.1\r\nHost: a.test\r\n\r\n")
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(resp.Body); err == nil {
		t.Errorf("short body read whole (%q): want an unexpected EOF", b)
	}
}

// TestRefusedRequests: what net/http's server refuses, this one refuses,
// with the same status, and closes the connection.
func TestRefusedRequests(t *testing.T) {
	addr := start(t, &Server{Handler: echo, MaxHeaderBytes: 1 << 10, RefusalHeader: http.Header{"X-Why": {"refused"}}})
	for _, tc := range []struct {
		name, raw string
		status    int
	}{
		{"missing Host", "GET / HTTP/1.1\r\n\r\n", 400},
		{"empty Host", "GET / HTTP/1.1\r\nHost: \r\n\r\n", 400},
		{"two Hosts", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400},
		{"bad Host", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400},
		{"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400},
		{"bad header name", "GET / HTTP/1.1\r\nHost: a\r\nX(y): 1\r\n\r\n", 400},
		{"NUL in a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x00b\r\n\r\n", 400},
		{"conflicting Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
		{"signed Content-Length", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +1\r\n\r\na", 400},
		{"bad chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400},
		{"unknown transfer coding", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
		{"two Transfer-Encoding fields", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505},
		{"malformed request line", "GET /\r\nHost: a\r\n\r\n", 400},
		{"head too large", "GET / HTTP/1.1\r\nHost: a\r\nX: " + strings.Repeat("v", 6<<10) + "\r\n\r\n", 431},
		{"expectation", "POST / HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\nContent-Length: 1\r\n\r\na", 417},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, addr)
			c.send(tc.raw)
			resp, body := c.answer("GET")
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%q), want %d", resp.StatusCode, body, tc.status)
			}
			// A bad chunked body passes the server (the head is fine):
			// the handler's read fails and the handler answers.
			if got := resp.Header.Get("X-Why"); got != "refused" && tc.name != "bad chunked" {
				t.Errorf("RefusalHeader: X-Why %q", got)
			}
			if !c.closed() {
				t.Error("connection left open after a refused request")
			}
		})
	}
}

// TestChunkedRequest: a Transfer-Encoding request goes to net/http's
// parser; the body arrives de-chunked, a Content-Length beside it is
// dropped (RFC 9112 6.1).
func TestChunkedRequest(t *testing.T) {
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%q %d %v %q", b, r.ContentLength, r.TransferEncoding, r.Header.Get("Content-Length"))
	})})
	c := dial(t, addr)
	c.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 99\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
	if _, body := c.answer("POST"); body != `"abc" -1 [chunked] ""` {
		t.Fatalf("got %s", body)
	}
}

func TestExpectContinue(t *testing.T) {
	addr := start(t, &Server{Handler: echo})
	c := dial(t, addr)
	c.send("POST /up HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
	line, err := c.br.ReadString('\n')
	if err != nil || line != "HTTP/1.1 100 Continue\r\n" {
		t.Fatalf("got %q, %v; want 100 Continue before the body is sent", line, err)
	}
	if blank, _ := c.br.ReadString('\n'); blank != "\r\n" {
		t.Fatalf("after 100 Continue: %q", blank)
	}
	c.send("abc")
	if _, body := c.answer("POST"); body != `POST /up a "abc"` {
		t.Fatalf("got %q", body)
	}
}

// TestUnreadBodyClosesGracefully: a handler that answers without reading
// a large body; the client gets the whole answer, then the connection ends
// (what is left of the body cannot be told from a next request).
func TestUnreadBodyClosesGracefully(t *testing.T) {
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "too large", http.StatusRequestEntityTooLarge)
	})})
	c := dial(t, addr)
	c.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1048576\r\n\r\n")
	go func() { _, _ = c.c.Write(bytes.Repeat([]byte("x"), 64<<10)) }()
	resp, body := c.answer("POST")
	if resp.StatusCode != 413 || body != "too large\n" || !resp.Close {
		t.Fatalf("got %d %q close %v", resp.StatusCode, body, resp.Close)
	}
	if !c.closed() {
		t.Error("connection left open with an unread body")
	}
}

// TestClientGoneCancelsContext: a handler waiting on its request's context
// learns that the client left.
func TestClientGoneCancelsContext(t *testing.T) {
	cancelled := make(chan error, 1)
	started := make(chan struct{})
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			cancelled <- r.Context().Err()
		case <-time.After(10 * time.Second):
			cancelled <- nil
		}
	})})
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-started
	c.c.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("context error %v, want context.Canceled", err)
	}
}

// TestContextEndsWithHandler: a request's context is done once its handler
// returned (as with net/http), whether or not Done was asked for before.
func TestContextEndsWithHandler(t *testing.T) {
	ctxs := make(chan context.Context, 2)
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/watched" {
			_ = r.Context().Done()
		}
		if err := r.Context().Err(); err != nil {
			panic(err)
		}
		ctxs <- r.Context()
	})})
	c := dial(t, addr)
	for _, p := range []string{"/watched", "/plain"} {
		c.send("GET " + p + " HTTP/1.1\r\nHost: a\r\n\r\n")
		if resp, _ := c.answer("GET"); resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		ctx := <-ctxs
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("%s: Err %v after the handler returned", p, ctx.Err())
		}
	}
	// The watched request's background read must not have eaten the
	// next request's first byte.
	c.send("GET /plain HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := c.answer("GET"); resp.StatusCode != 200 {
		t.Fatalf("after a watched request: %d", resp.StatusCode)
	}
}

func TestPanics(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	addr := start(t, &Server{
		ErrorLog: log.New(writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(p) }), "", 0),
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
			if r.URL.Path == "/abort" {
				panic(http.ErrAbortHandler)
			}
			panic("boom")
		}),
	})
	for _, p := range []string{"/abort", "/boom"} {
		c := dial(t, addr)
		c.send("GET " + p + " HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Errorf("%s: the body ended cleanly; want it truncated", p)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), "panic serving"); n != 1 || !strings.Contains(logs.String(), "boom") {
		t.Errorf("want one logged panic (boom, not ErrAbortHandler), got:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestHijack(t *testing.T) {
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		line, _ := brw.ReadString('\n')
		brw.WriteString("echo: " + line)
		brw.Flush()
	})})
	c := dial(t, addr)
	// The first frame rides in the same packet as the request: it must
	// reach the handler through the buffered reader.
	c.send("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\nhello\n")
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("%v %v", resp, err)
	}
	if line, _ := c.br.ReadString('\n'); line != "echo: hello\n" {
		t.Fatalf("got %q", line)
	}
}

func TestShutdownDrains(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		io.WriteString(w, "done")
	})}
	addr := start(t, s)
	idle := dial(t, addr)
	idle.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	idle.answer("GET")
	busy := dial(t, addr)
	busy.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()
	if !idle.closed() {
		t.Error("idle connection not closed by Shutdown")
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	close(release)
	resp, body := busy.answer("GET")
	if body != "done" || !resp.Close {
		t.Errorf("in-flight request: %q close %v; want done and Connection: close", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Error("still accepting after Shutdown")
	}
}

func TestShutdownTimesOut(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})}
	addr := start(t, s)
	defer close(release)
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown with an ended context: %v", err)
	}
}

func TestReadHeaderTimeout(t *testing.T) {
	addr := start(t, &Server{Handler: echo, ReadHeaderTimeout: 50 * time.Millisecond, IdleTimeout: time.Minute})
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a\r\n") // never finished
	if !c.closed() {
		t.Error("a head that never ends kept the connection open")
	}
}

func TestIdleTimeout(t *testing.T) {
	addr := start(t, &Server{Handler: echo, IdleTimeout: 50 * time.Millisecond})
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	c.answer("GET")
	if !c.closed() {
		t.Error("an idle connection outlived IdleTimeout")
	}
}

// TestLargeUpload streams a body bigger than every buffer through a
// handler that echoes its length.
func TestLargeUpload(t *testing.T) {
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d %v", n, err)
	})})
	const size = 8 << 20
	resp, err := http.Post("http://"+addr+"/", "application/octet-stream", bytes.NewReader(make([]byte, size)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if string(b) != fmt.Sprintf("%d <nil>", size) {
		t.Fatalf("got %q", b)
	}
}

// BenchmarkServe measures the server alone: keep-alive requests over
// loopback to a handler answering a fixed small body, against net/http's
// server with the same handler (whole-process allocations, client
// included).
func BenchmarkServe(b *testing.B) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/plain"}
		w.Header()["Content-Length"] = []string{"5"}
		io.WriteString(w, "hello")
	})
	for _, kind := range []string{"edge", "stdlib"} {
		b.Run(kind, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			var srv interface {
				Serve(net.Listener) error
				Close() error
			} = &Server{Handler: h}
			if kind == "stdlib" {
				srv = &http.Server{Handler: h}
			}
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Close() })
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Error(err)
					return
				}
				defer c.Close()
				br := bufio.NewReader(c)
				req := []byte("GET /bench HTTP/1.1\r\nHost: bench.test\r\nUser-Agent: bench\r\n\r\n")
				for pb.Next() {
					if _, err := c.Write(req); err != nil {
						b.Error(err)
						return
					}
					// Skip the head, then the 5-byte body.
					for {
						line, err := br.ReadSlice('\n')
						if err != nil {
							b.Error(err)
							return
						}
						if len(line) == 2 {
							break
						}
					}
					if _, err := br.Discard(5); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
