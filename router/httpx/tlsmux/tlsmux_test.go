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

// The handshake's limit ends with the handshake: the server that takes
// the connection over reads past it (it sets limits of its own).
func TestHandshakeLimitClearedForTheServer(t *testing.T) {
	const limit = 100 * time.Millisecond
	f := newFixture(t, limit)
	client := f.dial(t, "http/1.1")
	srv := next(t, f.h1, "HTTP/1.1")
	defer srv.Close()
	done := make(chan error, 1)
	go func() {
		// The handshake's deadline, had it been kept, would have
		// passed by the time this arrives (the server's read waits).
		time.Sleep(3 * limit)
		_, err := client.Write([]byte("x"))
		done <- err
	}()
	buf := make([]byte, 1)
	if _, err := io.ReadFull(srv, buf); err != nil {
		t.Fatalf("read after the handshake limit: %v (the handshake's deadline is still set)", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Write([]byte("y")); err != nil {
		t.Fatalf("write after the handshake limit: %v", err)
	}
}

// tcpPair returns the two ends of a loopback TCP connection: the server's
// wrapped by rawIO with the default held-write limit.
func tcpPair(t *testing.T) (*rawConn, net.Conn) {
	return tcpPairHeld(t, defaultHeldWriteTimeout)
}

func tcpPairHeld(t *testing.T, heldLimit time.Duration) (*rawConn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	rc, ok := rawIO(c, heldLimit).(*rawConn)
	if !ok {
		t.Fatal("a TCP connection did not get raw I/O")
	}
	t.Cleanup(func() { rc.Close() })
	return rc, peer
}

// nothingArrives checks that peer receives no byte within 50 ms (a
// negative check: it can miss a late byte, never invent one).
func nothingArrives(t *testing.T, peer net.Conn, when string) {
	t.Helper()
	_ = peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := peer.Read(make([]byte, 1)); n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the peer got %d bytes (%v), want none yet", when, n, err)
	}
	_ = peer.SetReadDeadline(time.Time{})
}

// Held writes leave with Close, in order and whole; the peer then sees
// the end of the stream.
func TestHeldWritesLeaveWithClose(t *testing.T) {
	rc, peer := tcpPair(t)
	rc.HoldWrites()
	for _, p := range []string{"answer;", "alert"} {
		if n, err := rc.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("held write of %q: %d, %v", p, n, err)
		}
	}
	// A deadline asked for while holding does not cut the held bytes
	// short: nothing is written until Close, which has its own limit.
	if err := rc.SetWriteDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	nothingArrives(t, peer, "before Close")
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(peer)
	if err != nil || string(got) != "answer;alert" {
		t.Fatalf("after Close the peer read %q, %v; want \"answer;alert\" and the end", got, err)
	}
}

// More than holdMax is not held: what was held and the write that
// overflows leave at once, within the write deadline asked for while
// holding.
func TestHoldOverflowWritesThrough(t *testing.T) {
	rc, peer := tcpPair(t)
	rc.HoldWrites()
	if _, err := rc.Write([]byte("head;")); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, holdMax+1)
	if _, err := rc.Write(big); err != nil {
		t.Fatal(err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, 5+len(big))
	if _, err := io.ReadFull(peer, got); err != nil || string(got[:5]) != "head;" {
		t.Fatalf("the overflowing write did not go through before Close: %q, %v", got[:5], err)
	}
	// Held no more: a deadline in the past now fails the next write.
	rc.HoldWrites()
	_ = rc.SetWriteDeadline(time.Now().Add(-time.Second))
	if _, err := rc.Write(big); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("an overflowing write after a past deadline: %v, want %v", err, os.ErrDeadlineExceeded)
	}
}

// fill writes to rc until its peer's receive buffer and its own send
// buffer are full (a write waits past a short deadline) and returns how
// many bytes went.
func fill(t *testing.T, rc *rawConn, peer net.Conn) int {
	t.Helper()
	_ = rc.Conn.(*net.TCPConn).SetWriteBuffer(4096)
	_ = peer.(*net.TCPConn).SetReadBuffer(4096)
	chunk := make([]byte, 64<<10)
	total := 0
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		n, err := rc.Write(chunk)
		total += n
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("filling the connection: %v", err)
			}
			_ = rc.SetWriteDeadline(time.Time{})
			return total
		}
	}
}

// Held bytes that do not fit in the socket wait for a slow reader, within
// the limit, rather than being lost at Close.
func TestHeldWritesWaitForASlowReader(t *testing.T) {
	rc, peer := tcpPairHeld(t, 30*time.Second)
	sent := fill(t, rc, peer)
	rc.HoldWrites()
	if _, err := rc.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // a reader that is slow to start
		_ = peer.SetReadDeadline(time.Now().Add(30 * time.Second))
		b, _ := io.ReadAll(peer)
		got <- b
	}()
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	b := <-got
	if len(b) != sent+4 || string(b[len(b)-4:]) != "tail" {
		t.Fatalf("the reader got %d bytes ending %q, want %d ending \"tail\"", len(b), b[max(0, len(b)-4):], sent+4)
	}
}

// A reader that never reads holds Close no longer than the limit.
func TestHeldWritesLimit(t *testing.T) {
	rc, peer := tcpPairHeld(t, 200*time.Millisecond)
	fill(t, rc, peer)
	rc.HoldWrites()
	if _, err := rc.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		_ = rc.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close waited for a reader that never reads far beyond the 200 ms limit")
	}
}
