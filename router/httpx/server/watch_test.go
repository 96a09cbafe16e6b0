package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// watchSettled returns once the background read of r's connection, if one
// was started, has ended (read a byte, or saw the client's end), or after
// a deadline. It lets a test handler be sure that the read it started by
// asking for Done has had its effect before it returns.
func watchSettled(r *http.Request) {
	c := r.Context().(*requestContext).ex.c
	c.watchMu.Lock()
	started, done := c.watchStarted, c.watchDone
	c.watchMu.Unlock()
	if !started {
		return
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// TestWatchKeepsPipelinedBytes: handlers that ask for their context's
// Done start a one-byte background read below the buffered reader; the
// byte it takes belongs to the next request and must reach it, in order,
// however the client's bytes are split into packets. A pending byte from
// an earlier background read must not be overwritten by the next one
// (net/http's startBackgroundRead returns early when it holds one).
func TestWatchKeepsPipelinedBytes(t *testing.T) {
	// The POST's background read starts only once its body is read
	// (asked for before, started by the body's end).
	paths := []string{"/p0", "/p1", "/p2", "/xadmin"}
	stream := "GET /p0 HTTP/1.1\r\nHost: a\r\n\r\n" +
		"POST /p1 HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc" +
		"GET /p2 HTTP/1.1\r\nHost: a\r\n\r\n" +
		"GET /xadmin HTTP/1.1\r\nHost: a\r\n\r\n"
	bodies := map[string]string{"/p1": "abc"}
	var mu sync.Mutex
	var seen []string
	entered := make(chan struct{}, len(paths))
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
		_ = r.Context().Done()
		entered <- struct{}{}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		watchSettled(r)
		io.WriteString(w, "path="+r.URL.Path+" body="+string(b))
	})})
	firstHead := strings.Index(stream, "\r\n\r\n") + 4
	for split := 1; split < len(stream); split++ {
		mu.Lock()
		seen = nil
		mu.Unlock()
		for len(entered) > 0 {
			<-entered
		}
		c := dial(t, addr)
		c.send(stream[:split])
		if split >= firstHead {
			// The rest goes out while the first handler's background
			// read is waiting for it.
			select {
			case <-entered:
			case <-time.After(5 * time.Second):
				t.Fatalf("split %d: the first request was not served", split)
			}
		}
		c.send(stream[split:])
		// The client's end makes every background read return.
		if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			resp, body := c.answer("GET")
			want := "path=" + p + " body=" + bodies[p]
			if resp.StatusCode != 200 || body != want {
				t.Fatalf("split %d at %q: answer %d %q, want 200 %q", split, stream[split:min(split+8, len(stream))], resp.StatusCode, body, want)
			}
		}
		mu.Lock()
		got := fmt.Sprint(seen)
		mu.Unlock()
		if got != fmt.Sprint(paths) {
			t.Fatalf("split %d: handlers saw %s, want %v", split, got, paths)
		}
		c.c.Close()
	}
}

// TestHijackGetsWatchedByte: a byte taken by the background read is in
// the hijacker's buffered reader (as net/http puts it there), so a
// hijacker that drains the buffer and then reads the connection itself
// loses nothing.
func TestHijackGetsWatchedByte(t *testing.T) {
	entered := make(chan struct{})
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.Context().Done()
		close(entered)
		watchSettled(r)
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer conn.Close()
		buffered, _ := brw.Reader.Peek(brw.Reader.Buffered())
		line := string(buffered)
		for !strings.HasSuffix(line, "\n") {
			var b [64]byte
			_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := conn.Read(b[:])
			line += string(b[:n])
			if err != nil {
				break
			}
		}
		io.WriteString(conn, "got "+line)
	})})
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: x\r\n\r\n")
	<-entered
	c.send("hello\n")
	if line, err := c.br.ReadString('\n'); line != "got hello\n" {
		t.Fatalf("hijacker read %q (%v), want %q", line, err, "got hello\n")
	}
}
