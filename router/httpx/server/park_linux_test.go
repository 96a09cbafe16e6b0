package server

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// waitParked polls until n connections are parked in s's poller.
func waitParked(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ps := s.parks.Load()
		got := 0
		if ps != nil {
			got, _ = ps.count()
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("parked connections = %d, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A connection idle for ParkIdleAfter is parked: its goroutine ends (so
// an idle connection costs no stack), and its next request, whenever it
// comes, is served by a new one, as is a pipelined pair.
func TestIdleConnectionParksWithoutGoroutine(t *testing.T) {
	s := &Server{ParkIdleAfter: 10 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	})}
	addr := start(t, s)
	const n = 50
	var clients []*client
	for i := range n {
		c := dial(t, addr)
		c.send(fmt.Sprintf("GET /a%d HTTP/1.1\r\nHost: x\r\n\r\n", i))
		if resp, body := c.answer("GET"); resp.StatusCode != 200 || body != fmt.Sprintf("hello /a%d", i) {
			t.Fatalf("first answer = %d %q", resp.StatusCode, body)
		}
		clients = append(clients, c)
	}
	waitParked(t, s, n)
	waitIdleBare(t, s, n)
	// Every connection's goroutine has ended: far fewer goroutines than
	// connections are left (the test's, the server's accept loop, the
	// poller, the sweeper).
	if g := runtime.NumGoroutine(); g >= n {
		t.Fatalf("%d goroutines with %d parked connections, want fewer than %d", g, n, n)
	}
	for i, c := range clients {
		c.send(fmt.Sprintf("GET /b%d HTTP/1.1\r\nHost: x\r\n\r\nGET /c%d HTTP/1.1\r\nHost: x\r\n\r\n", i, i))
		for _, want := range []string{fmt.Sprintf("hello /b%d", i), fmt.Sprintf("hello /c%d", i)} {
			if resp, body := c.answer("GET"); resp.StatusCode != 200 || body != want {
				t.Fatalf("client %d: answer = %d %q, want 200 %q", i, resp.StatusCode, body, want)
			}
		}
	}
	waitParked(t, s, n) // parked again
	for _, c := range clients[:n/2] {
		c.c.Close()
	}
	waitParked(t, s, n/2) // a client's close wakes and ends its connection
	waitIdleBare(t, s, n/2)
}

// A parked connection is closed when its idle deadline passes.
func TestParkedConnectionIdleTimeout(t *testing.T) {
	s := &Server{ParkIdleAfter: 10 * time.Millisecond, IdleTimeout: 300 * time.Millisecond,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	addr := start(t, s)
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.answer("GET")
	waitParked(t, s, 1)
	began := time.Now()
	if !c.closed() {
		t.Fatal("parked connection still open after the idle timeout")
	}
	if waited := time.Since(began); waited > 2*time.Second {
		t.Fatalf("parked connection closed after %v, want about the 300ms idle timeout", waited)
	}
	waitParked(t, s, 0)
	waitIdleBare(t, s, 0)
	s.mu.Lock()
	left := len(s.conns)
	s.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d connections still tracked after the idle timeout", left)
	}
}

// Shutdown closes parked connections at once, as idle ones, and stops
// the poller.
func TestShutdownClosesParkedConnections(t *testing.T) {
	s := &Server{ParkIdleAfter: 10 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	addr := start(t, s)
	var clients []*client
	for range 3 {
		c := dial(t, addr)
		c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		c.answer("GET")
		clients = append(clients, c)
	}
	waitParked(t, s, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	for i, c := range clients {
		if !c.closed() {
			t.Fatalf("client %d: parked connection open after Shutdown", i)
		}
	}
	if s.parks.Load() != nil {
		t.Fatal("poller still running after Shutdown")
	}
	waitIdleBare(t, s, 0)
}

// A negative ParkIdleAfter keeps each idle connection's goroutine.
func TestParkingOff(t *testing.T) {
	s := &Server{ParkIdleAfter: -1, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	addr := start(t, s)
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.answer("GET")
	waitIdleBare(t, s, 1)
	if s.parks.Load() != nil {
		t.Fatal("poller started with parking off")
	}
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, _ := c.answer("GET"); resp.StatusCode != 200 {
		t.Fatalf("second answer = %d", resp.StatusCode)
	}
}

// Connections whose requests come at about the sweep's own pace park and
// resume many times over while every answer stays whole and in order:
// the sweeper's request and a request's arrival race on every wait.
func TestParkingRacesRequests(t *testing.T) {
	s := &Server{ParkIdleAfter: time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	})}
	addr := start(t, s)
	const conns, requests = 8, 150
	errs := make(chan error, conns)
	for i := range conns {
		c := dial(t, addr)
		go func() {
			for j := range requests {
				if _, err := fmt.Fprintf(c.c, "GET /%d/%d HTTP/1.1\r\nHost: x\r\n\r\n", i, j); err != nil {
					errs <- err
					return
				}
				resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
				if err != nil {
					errs <- fmt.Errorf("conn %d request %d: %w", i, j, err)
					return
				}
				b := make([]byte, 64)
				nb, _ := resp.Body.Read(b)
				resp.Body.Close()
				if want := fmt.Sprintf("hello /%d/%d", i, j); string(b[:nb]) != want {
					errs <- fmt.Errorf("conn %d: answer %q, want %q", i, b[:nb], want)
					return
				}
				time.Sleep(time.Duration(j%4) * time.Millisecond) // the client's pace, not synchronisation
			}
			errs <- nil
		}()
	}
	for range conns {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if _, ever := s.parks.Load().count(); ever < conns {
		t.Fatalf("connections parked %d times, want at least %d (the race was not run)", ever, conns)
	}
	t.Logf("parked %d times over %d requests", func() int { _, e := s.parks.Load().count(); return e }(), conns*requests)
}
