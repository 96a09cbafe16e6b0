package server

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// waitIdleBare polls until n connections wait for a request without
// buffers.
func waitIdleBare(t *testing.T, s *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.idleBare.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("connections idle without buffers = %d, want %d", s.idleBare.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// An idle keep-alive connection gives its read and write buffers back
// while it waits, and serves its next request as before; so does a
// connection whose next request was pipelined behind the first (it never
// waits). net/http's server keeps both buffers for the connection's life.
func TestIdleConnectionHoldsNoBuffers(t *testing.T) {
	s := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s", r.URL.Path)
	})}
	addr := start(t, s)
	var clients []*client
	for range 3 {
		c := dial(t, addr)
		c.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp, body := c.answer("GET"); resp.StatusCode != 200 || body != "hello /a" {
			t.Fatalf("first answer = %d %q", resp.StatusCode, body)
		}
		clients = append(clients, c)
	}
	waitIdleBare(t, s, 3)
	for i, c := range clients {
		c.send(fmt.Sprintf("GET /b%d HTTP/1.1\r\nHost: x\r\n\r\nGET /c%d HTTP/1.1\r\nHost: x\r\n\r\n", i, i))
		for _, want := range []string{fmt.Sprintf("hello /b%d", i), fmt.Sprintf("hello /c%d", i)} {
			if resp, body := c.answer("GET"); resp.StatusCode != 200 || body != want {
				t.Fatalf("client %d: answer = %d %q, want 200 %q", i, resp.StatusCode, body, want)
			}
		}
	}
	waitIdleBare(t, s, 3)
	for _, c := range clients {
		c.c.Close()
	}
	waitIdleBare(t, s, 0)
}

// The idle deadline still ends a connection that waits without buffers.
func TestIdleTimeoutWithoutBuffers(t *testing.T) {
	s := &Server{IdleTimeout: 50 * time.Millisecond, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	addr := start(t, s)
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	c.answer("GET")
	if !c.closed() {
		t.Fatal("connection still open after the idle timeout")
	}
	waitIdleBare(t, s, 0)
}
