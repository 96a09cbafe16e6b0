package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// stallingBackend answers each request with head (possibly empty), then
// stalls until the proxy closes the connection, which it reports on
// closed. Each request it reads is reported on arrived.
func stallingBackend(t *testing.T, head string) (addr string, arrived, closed chan struct{}) {
	arrived, closed = make(chan struct{}, 8), make(chan struct{}, 8)
	addr = rawBackend(t, func(c net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		arrived <- struct{}{}
		io.WriteString(c, head)
		_, _ = io.Copy(io.Discard, c) // returns when the proxy closes its end
		closed <- struct{}{}
	})
	return addr, arrived, closed
}

// newTestTransport is a Transport with a one-minute header timeout.
func newTestTransport() *Transport {
	return New(Options{DialTimeout: 5 * time.Second, HeaderTimeout: time.Minute, IdleConnTimeout: time.Minute, MaxIdleConnsPerHost: 4})
}

// rawBackend serves each connection with fn on a loopback listener closed
// when the test ends, and returns its address.
func rawBackend(t *testing.T, fn func(net.Conn)) string {
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
	return l.Addr().String()
}

func within(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not within 10s", what)
	}
}

// A client going away while the backend has not answered breaks the
// exchange, whether it happens within the first poll (the context is
// checked when the poll deadline passes) or after (the watch is armed).
func TestH1CancelWhileWaitingForHeaders(t *testing.T) {
	for _, c := range []struct {
		name string
		poll time.Duration
	}{{"within-the-poll", 100 * time.Millisecond}, {"armed", time.Nanosecond}, {"default", defaultWatchPoll}} {
		t.Run(c.name, func(t *testing.T) {
			addr, arrived, closed := stallingBackend(t, "")
			tr := newTestTransport()
			defer tr.Shutdown()
			tr.watchPoll = c.poll
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
			done := make(chan error, 1)
			go func() {
				resp, err := tr.RoundTrip(req)
				if resp != nil {
					resp.Body.Close()
				}
				done <- err
			}()
			within(t, "request reaching the backend", arrived)
			cancel()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("a cancelled exchange succeeded")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("a cancelled exchange still waits for the backend")
			}
			within(t, "the backend connection closed", closed)
		})
	}
}

// A client going away while a body that is not buffered yet streams
// breaks the read of the body.
func TestH1CancelWhileReadingBody(t *testing.T) {
	addr, arrived, closed := stallingBackend(t, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
	tr := newTestTransport()
	defer tr.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "request reaching the backend", arrived)
	buf := make([]byte, 7)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "partial" {
		t.Fatalf("start of the body: %q %v", buf, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 100))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("read of a stalled body after cancellation: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled body read still waits for the backend")
	}
	resp.Body.Close()
	within(t, "the backend connection closed", closed)
}

// A fast exchange with a cancellable context leaves no watch behind: the
// connection goes back to the pool, and cancelling afterwards does not
// break it.
func TestH1CancelAfterExchangeKeepsConnection(t *testing.T) {
	addr := rawBackend(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	tr := newTestTransport()
	defer tr.Shutdown()
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || string(b) != "ok" {
			t.Fatalf("exchange %d: %q %v", i, b, err)
		}
	}
	tr.mu.Lock()
	idle := len(tr.idle[addr])
	tr.mu.Unlock()
	if idle != 1 {
		t.Fatalf("%d idle connections after 3 sequential exchanges, want 1", idle)
	}
}

// A backend that half-closes a pooled connection after its answer (it
// still reads, never answers again): the next request on it must not wait
// for a readiness the poller may have dropped, but find the close and be
// sent again on a new connection.
func TestH1HalfClosedPooledConnection(t *testing.T) {
	addr := rawBackend(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		c.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, br)
	})
	tr := newTestTransport()
	defer tr.Shutdown()
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			cancel()
			t.Fatalf("exchange %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || string(b) != "ok" {
			t.Fatalf("exchange %d: %q %v", i, b, err)
		}
	}
}

// A backend that sends a body after its answer to HEAD (or after a 204 or
// 304), in a later write, never has those bytes read as the next request's
// answer: the connection is peeked at before reuse.
func TestStrayBytesAfterABodylessAnswer(t *testing.T) {
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			answered, goAhead, written := make(chan struct{}), make(chan struct{}), make(chan struct{})
			addr := rawBackend(t, func(c net.Conn) {
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				if req.URL.Path == "/first" {
					head := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
					if req.Method == http.MethodGet {
						head = "HTTP/1.1 204 No Content\r\n\r\n"
					}
					io.WriteString(c, head)
					close(answered)
					<-goAhead
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstray!")
					close(written)
				}
				for ; err == nil; req, err = http.ReadRequest(br) {
					if req.URL.Path != "/first" {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nown")
					}
				}
			})
			tr := newTestTransport()
			defer tr.Shutdown()
			req, _ := http.NewRequest(method, "http://"+addr+"/first", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			<-answered
			close(goAhead)
			<-written // on loopback the bytes are in our socket once written
			req, _ = http.NewRequest(http.MethodGet, "http://"+addr+"/next", nil)
			resp, err = tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "own" {
				t.Fatalf("the next request got %q: bytes sent after a bodiless answer were taken for its answer", b)
			}
		})
	}
}
