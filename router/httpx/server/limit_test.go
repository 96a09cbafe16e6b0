package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/sockio"
)

// limited listens on a loopback port through LimitListener; refusals are
// counted and reported on the channel.
func limited(t *testing.T, max int) (*limitListener, *atomic.Int32, chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var refusals atomic.Int32
	refusedCh := make(chan struct{}, 16)
	ll := LimitListener(ln, max, func() {
		refusals.Add(1)
		refusedCh <- struct{}{}
	}).(*limitListener)
	return ll, &refusals, refusedCh
}

// refusedAtOnce dials addr and reports whether the connection was closed
// without a byte, before any request was sent.
func refusedAtOnce(t *testing.T, addr string, refusedCh <-chan struct{}) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if n != 0 || !(errors.Is(err, io.EOF) || isReset(err)) {
		t.Fatalf("connection over the limit: read %d bytes, %v; want EOF at once", n, err)
	}
	select {
	case <-refusedCh:
	case <-time.After(5 * time.Second):
		t.Fatal("refused was not called")
	}
}

// waitOpen polls until the listener counts open connections, or fails
// after a deadline.
func waitOpen(t *testing.T, ll *limitListener, open int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(ll.slots) != open {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections open, want %d", len(ll.slots), open)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLimitListenerEdge: with max 2, two connections are served (one of
// them hijacked, which keeps its slot until closed), a third is closed at
// once and counted, and once a slot is free a new connection is served.
// Connections through the wrapper keep edge's raw socket I/O.
func TestLimitListenerEdge(t *testing.T) {
	ll, refusals, refusedCh := limited(t, 2)
	release := make(chan struct{})
	var rawIO atomic.Bool
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rawIO.Store(r.Context().(*requestContext).ex.c.sock != nil)
		if r.URL.Path != "/hijack" {
			io.WriteString(w, "ok")
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
		brw.Flush()
		<-release
	})}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ll) }()
	t.Cleanup(func() {
		s.Close()
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	addr := ll.Addr().String()

	hijacked := dial(t, addr)
	hijacked.send("GET /hijack HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := hijacked.answer("GET"); body != "hijacked" {
		t.Fatalf("hijacked: %q", body)
	}
	kept := dial(t, addr)
	kept.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := kept.answer("GET"); body != "ok" {
		t.Fatalf("second connection: %q", body)
	}
	if !rawIO.Load() {
		t.Error("a connection through LimitListener lost edge's raw socket I/O")
	}
	refusedAtOnce(t, addr, refusedCh)

	close(release) // the hijacker closes its connection
	waitOpen(t, ll, 1)
	late := dial(t, addr)
	late.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := late.answer("GET"); body != "ok" {
		t.Fatalf("after a slot was freed: %q", body)
	}
	kept.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := kept.answer("GET"); body != "ok" {
		t.Fatalf("kept connection: %q", body)
	}
	if n := refusals.Load(); n != 1 {
		t.Errorf("refused called %d times, want 1", n)
	}
}

// TestLimitListenerNetHTTP: the same wrapper under net/http's server,
// whose Connection: close goes through the wrapper's CloseWrite.
func TestLimitListenerNetHTTP(t *testing.T) {
	ll, refusals, refusedCh := limited(t, 1)
	s := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	})}
	go s.Serve(ll)
	t.Cleanup(func() { s.Close() })
	addr := ll.Addr().String()

	first := dial(t, addr)
	first.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := first.answer("GET"); body != "ok" {
		t.Fatalf("first: %q", body)
	}
	refusedAtOnce(t, addr, refusedCh)
	first.send("GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	if _, body := first.answer("GET"); body != "ok" || !first.closed() {
		t.Fatalf("closing request: %q", body)
	}
	waitOpen(t, ll, 0)
	second := dial(t, addr)
	second.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := second.answer("GET"); body != "ok" {
		t.Fatalf("after a slot was freed: %q", body)
	}
	if n := refusals.Load(); n != 1 {
		t.Errorf("refused called %d times, want 1", n)
	}
}

// TestLimitConnDelegates: a wrapped connection frees its slot once however
// often it is closed, and offers the accepted connection's syscall.Conn
// (sockio), CloseWrite and ReadFrom.
func TestLimitConnDelegates(t *testing.T) {
	ll, _, _ := limited(t, 4)
	defer ll.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ll.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	client, err := net.Dial("tcp", ll.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	_ = client.SetDeadline(time.Now().Add(5 * time.Second))
	c := <-accepted
	if c == nil {
		t.Fatal("Accept failed")
	}
	if sockio.New(c) == nil {
		t.Error("sockio cannot use the wrapped connection")
	}
	if _, err := c.(io.ReaderFrom).ReadFrom(io.LimitReader(zeros{}, 3)); err != nil {
		t.Errorf("ReadFrom: %v", err)
	}
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Errorf("CloseWrite: %v", err)
	}
	if b, err := io.ReadAll(client); len(b) != 3 || err != nil {
		t.Errorf("client read %q, %v; want 3 bytes and EOF", b, err)
	}
	if len(ll.slots) != 1 {
		t.Fatalf("%d slots taken, want 1", len(ll.slots))
	}
	c.Close()
	c.Close()
	if len(ll.slots) != 0 {
		t.Errorf("%d slots taken after closing twice, want 0", len(ll.slots))
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
