package sockio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestErrorsLikeNetConn: what callers test errors for (EOF,
// connection reset as a read OpError, deadlines, closed connections)
// reads the same through a Socket as through net.Conn.
func TestErrorsLikeNetConn(t *testing.T) {
	s, c, peer := pair(t)
	// Data both ways, including a write larger than the socket buffers.
	big := bytes.Repeat([]byte("x"), 4<<20)
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, io.LimitReader(peer, int64(len(big))))
		done <- err
	}()
	if n, err := s.Write(big); n != len(big) || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	peer.Write([]byte("hi"))
	buf := make([]byte, 8)
	if n, err := s.Read(buf); n != 2 || err != nil || string(buf[:2]) != "hi" {
		t.Fatalf("Read: %d %q %v", n, buf[:n], err)
	}
	// A deadline: a timeout net.Error, as net.Conn gives.
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) || !isTimeout(err) {
		t.Fatalf("Read past the deadline: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	// The peer resets the connection: a read OpError.
	peer.(*net.TCPConn).SetLinger(0)
	peer.Close()
	var op *net.OpError
	_, err := s.Read(buf)
	if err != io.EOF && !(errors.As(err, &op) && op.Op == "read" && strings.Contains(err.Error(), "reset")) {
		t.Fatalf("Read after a reset: %v (%T)", err, err)
	}
	c.Close()
	if _, err := s.Read(buf); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read after Close: %v", err)
	}
	if _, err := s.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
}

// pair returns a Socket on one end of a loopback TCP connection and the
// other end.
func pair(t *testing.T) (*Socket, net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	t.Cleanup(func() { c.Close(); peer.Close() })
	s := New(c)
	if s == nil {
		t.Skip("no raw socket I/O on this system")
	}
	return s, c, peer
}

// TryRead never waits: nothing to read is ErrWouldBlock, and what is there
// is read as Read would.
func TestTryRead(t *testing.T) {
	s, _, peer := pair(t)
	buf := make([]byte, 8)
	if n, err := s.TryRead(buf); n != 0 || !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryRead with nothing sent = %d, %v; want 0, ErrWouldBlock", n, err)
	}
	peer.Write([]byte("ab"))
	// The bytes are in flight on loopback: WaitReadable sees them come.
	if err := s.WaitReadable(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.TryRead(buf); n != 2 || err != nil || string(buf[:2]) != "ab" {
		t.Fatalf("TryRead after a write = %d, %v, %q; want 2, nil, ab", n, err, buf[:n])
	}
	peer.Close()
	if err := s.WaitReadable(); err != nil {
		t.Fatalf("WaitReadable after the peer closed = %v, want nil (the read reports EOF)", err)
	}
	if n, err := s.TryRead(buf); n != 0 || err != io.EOF {
		t.Fatalf("TryRead after the peer closed = %d, %v; want 0, EOF", n, err)
	}
}

// WaitReadable takes no byte, returns when one arrives, and keeps to the
// read deadline.
func TestWaitReadable(t *testing.T) {
	s, c, peer := pair(t)
	buf := make([]byte, 8)
	if _, err := s.TryRead(buf); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("TryRead = %v, want ErrWouldBlock", err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if err := s.WaitReadable(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("WaitReadable past the deadline = %v, want os.ErrDeadlineExceeded", err)
	}
	c.SetReadDeadline(time.Time{})
	woke := make(chan error, 1)
	go func() { woke <- s.WaitReadable() }()
	peer.Write([]byte("x"))
	if err := <-woke; err != nil {
		t.Fatalf("WaitReadable = %v", err)
	}
	if n, err := s.Read(buf); n != 1 || err != nil || buf[0] != 'x' {
		t.Fatalf("Read after WaitReadable = %d, %v; want the byte it did not take", n, err)
	}
	c.Close()
	if err := s.WaitReadable(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WaitReadable on a closed connection = %v, want net.ErrClosed", err)
	}
}
