package main

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// startBackend runs the backend on a free loopback port and returns its
// address.
func startBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	zeros := make([]byte, 64<<10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveConn(c, zeros)
		}
	}()
	return ln.Addr().String()
}

// A bulk run downloads whole transfers of the asked size: at least one in
// 200 ms from loopback, every byte counted.
func TestBulkCountsTheDownloadedBytes(t *testing.T) {
	addr := startBackend(t)
	const size = 1 << 20
	bytes, el, err := runBulk(addr, 2, size, 200*time.Millisecond)
	if err != nil {
		t.Fatalf("runBulk: %v", err)
	}
	if bytes < size {
		t.Errorf("runBulk read %d bytes, want at least one whole download of %d", bytes, size)
	}
	if el < 200*time.Millisecond {
		t.Errorf("runBulk took %v, want at least the 200ms asked for", el)
	}
}

// A ping-pong run gets every message echoed: round trips counted, p50 no
// more than p99, both positive.
func TestPingPongEchoesEveryMessage(t *testing.T) {
	addr := startBackend(t)
	n, _, p50, p99, err := runPingPong(addr, 3, 64, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("runPingPong: %v", err)
	}
	if n == 0 {
		t.Fatal("runPingPong made no round trip")
	}
	if p50 <= 0 || p99 < p50 {
		t.Errorf("p50 %v, p99 %v: want 0 < p50 <= p99", p50, p99)
	}
}

// A connect run opens a new connection for every exchange: the backend
// accepts as many connections as the run counts, each echoed, p50 no more
// than p99, both positive.
func TestConnectOpensAConnectionPerExchange(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var accepted atomic.Int64
	go func() {
		zeros := make([]byte, 1024)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go serveConn(c, zeros)
		}
	}()
	n, _, p50, p99, err := runConnect(ln.Addr().String(), 2, 16, 100*time.Millisecond)
	if err != nil {
		t.Fatalf("runConnect: %v", err)
	}
	if n < 2 {
		t.Fatalf("runConnect made %d connections, want at least one per worker", n)
	}
	if got := accepted.Load(); got != int64(n) {
		t.Errorf("the backend accepted %d connections, the run counted %d: want one per exchange", got, n)
	}
	if p50 <= 0 || p99 < p50 {
		t.Errorf("p50 %v, p99 %v: want 0 < p50 <= p99", p50, p99)
	}
}

// A connect run against an address nobody listens on fails with the
// dialling error, not a zero rate.
func TestConnectReportsARefusedConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, _, _, _, err := runConnect(addr, 1, 16, 50*time.Millisecond); err == nil {
		t.Fatal("runConnect to a closed port: no error")
	}
}
