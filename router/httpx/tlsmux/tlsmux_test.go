package tlsmux

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/testcert"
)

// serverConfig returns a TLS configuration with a self-signed certificate
// for "mux.test", offering h2, http/1.1 and acme-tls/1.
func serverConfig(t *testing.T) *tls.Config {
	return testcert.Config(t, "mux.test", ProtoH2, "http/1.1", "acme-tls/1")
}

type fixture struct {
	s        *Server
	addr     string
	h1, h2   chan *tls.Conn
	served   chan error
	mu       sync.Mutex
	failures []string
}

func newFixture(t *testing.T, timeout time.Duration) *fixture {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{addr: ln.Addr().String(), h1: make(chan *tls.Conn, 4), h2: make(chan *tls.Conn, 4), served: make(chan error, 1)}
	f.s = New(Options{Config: serverConfig(t), HandshakeTimeout: timeout,
		H1: func(c *tls.Conn) { f.h1 <- c },
		H2: func(c *tls.Conn) { f.h2 <- c },
		HandshakeError: func(remote string, err error) {
			f.mu.Lock()
			f.failures = append(f.failures, remote+": "+err.Error())
			f.mu.Unlock()
		}})
	go func() { f.served <- f.s.Serve(ln) }()
	t.Cleanup(func() { f.s.Close() })
	return f
}

func (f *fixture) dial(t *testing.T, protos ...string) *tls.Conn {
	t.Helper()
	c, err := tls.Dial("tcp", f.addr, &tls.Config{InsecureSkipVerify: true, ServerName: "mux.test", NextProtos: protos})
	if err != nil {
		t.Fatalf("dial with ALPN %v: %v", protos, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// next returns the next connection handed to the server of ch, or fails
// after 10 s.
func next(t *testing.T, ch chan *tls.Conn, what string) *tls.Conn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("no connection reached the %s server within 10 s", what)
		return nil
	}
}

// Each connection goes where the protocol its handshake chose goes:
// HTTP/1.1 and no ALPN to the HTTP/1.1 server, h2 to the HTTP/2 server,
// each handshaken; anything else (the ACME TLS-ALPN-01 challenge) closed.
func TestConnectionsGoWhereTheirProtocolGoes(t *testing.T) {
	f := newFixture(t, 5*time.Second)
	for _, protos := range [][]string{{"http/1.1"}, nil, {"h2", "http/1.1"}} {
		c := f.dial(t, protos...)
		want := c.ConnectionState().NegotiatedProtocol
		var got *tls.Conn
		if want == ProtoH2 {
			got = next(t, f.h2, "HTTP/2")
		} else {
			got = next(t, f.h1, "HTTP/1.1")
		}
		st := got.ConnectionState()
		if !st.HandshakeComplete || st.NegotiatedProtocol != want {
			t.Errorf("ALPN %v: the server got a connection with handshake done %v, protocol %q; want done, %q",
				protos, st.HandshakeComplete, st.NegotiatedProtocol, want)
		}
		// Bytes flow both ways on what the server got.
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(got, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("read %q, %v", buf, err)
		}
		got.Close()
	}
	c := f.dial(t, "acme-tls/1")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an acme-tls/1 connection was not closed after its handshake: %v", err)
	}
}

// A client that connects and never completes its handshake is closed
// after the handshake timeout and reported, and it does not hold the
// listener: another client is served meanwhile.
func TestStalledHandshakeIsClosedAndHoldsNobody(t *testing.T) {
	f := newFixture(t, 300*time.Millisecond)
	stalled, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	f.dial(t, "http/1.1")
	next(t, f.h1, "HTTP/1.1").Close()
	_ = stalled.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := stalled.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the stalled connection was not closed by the handshake timeout: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		n := len(f.failures)
		f.mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d handshake failures reported, want 1", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Close ends Serve with net.ErrClosed and the listener stops taking
// connections; Wait returns once the connections being served are done.
func TestCloseEndsServe(t *testing.T) {
	f := newFixture(t, time.Second)
	f.dial(t, "http/1.1")
	held := next(t, f.h1, "HTTP/1.1")
	if err := f.s.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-f.served:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after Close")
	}
	if c, err := net.DialTimeout("tcp", f.addr, time.Second); err == nil {
		c.Close()
		t.Fatal("the address still accepts connections after Close")
	}
	// The H1 callback returned at once (it only passed the connection
	// on), so nothing is being served any more.
	f.s.Wait()
	held.Close()
}

// Wait waits for the connections still being served after Close: what a
// graceful shutdown waits for.
func TestWaitWaitsForConnectionsBeingServed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	in, release := make(chan struct{}), make(chan struct{})
	s := New(Options{Config: serverConfig(t), H1: func(c *tls.Conn) {
		close(in)
		<-release
		c.Close()
	}})
	go func() { _ = s.Serve(ln) }()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-in
	s.Close()
	waited := make(chan struct{})
	go func() {
		s.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		t.Fatal("Wait returned while a connection was being served")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return once the connection was done")
	}
}
