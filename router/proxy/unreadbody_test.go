package proxy

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// An answer given without reading the request body (no route here; an
// open breaker or a policy's refusal alike) leaves the client's
// keep-alive connection usable: the next request on it is answered. With
// net/http's server in full duplex the rest of an unread body was read
// only after the handler returned, and the server then panicked on the
// connection's next read and closed it.
func TestAnswerWithoutReadingTheBodyKeepsTheConnection(t *testing.T) {
	h := newHarness(t, Options{})
	for _, tc := range []struct{ name, framing string }{
		{"sized", "Content-Length: 5\r\n\r\nhello"},
		{"chunked", "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn := h.dialFront()
			br := bufio.NewReader(conn)
			if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: nowhere.test\r\n"+tc.framing); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("first answer: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.Close {
				// Said so: the server may close (Levee's own after an
				// unread body, either server after a chunked one, RFC
				// 9112 6.3); only a silent close is wrong.
				return
			}
			// The connection stays open while the client thinks: a read
			// sees no end within a while.
			_ = conn.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := br.Peek(1); !isTimeout(err) {
				t.Fatalf("the connection ended after the first answer (%v); server %s", err, os.Getenv("LEVEE_TEST_SERVER"))
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: nowhere.test\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("second request on the connection: %v", err)
			}
			resp.Body.Close()
		})
	}
}

// noDeadlines takes every deadline and applies none.
type noDeadlines struct{}

func (noDeadlines) SetReadDeadline(time.Time) error  { return nil }
func (noDeadlines) SetWriteDeadline(time.Time) error { return nil }

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// A read of the client's body that fails because the backend client
// closed the body (as net/http's Transport does when the backend resets
// the stream) is not the client's fault: the exchange is not answered as
// a malformed body.
func TestBodyReadFailingAfterTheBackendClientClosedItIsNotTheClients(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	req := httptest.NewRequest(http.MethodPost, "/", pr)
	req.ProtoMajor, req.ProtoMinor = 2, 0
	x := &exchange{dl: noDeadlines{}, req: req, p: &Handler{}, gate: &bodyGate{}}
	b := &clientBody{r: pr, c: pr, x: x, gate: x.gate}
	read := make(chan error, 1)
	go func() {
		_, err := b.Read(make([]byte, 8))
		read <- err
	}()
	_ = b.Close() // the pipe's Close makes the pending Read fail
	if err := <-read; err == nil {
		t.Fatal("read after close: no error")
	}
	if x.badBody.Load() {
		t.Error("a read failed by the backend client's close marked the client's body bad")
	}
	// A read that fails on its own is the client's.
	pr2, pw2 := io.Pipe()
	pw2.CloseWithError(errors.New("client broke the body"))
	x2 := &exchange{dl: noDeadlines{}, req: httptest.NewRequest(http.MethodPost, "/", pr2), p: &Handler{}, gate: &bodyGate{}}
	b2 := &clientBody{r: pr2, c: pr2, x: x2, gate: x2.gate}
	if _, err := b2.Read(make([]byte, 8)); err == nil || !x2.badBody.Load() {
		t.Errorf("a broken body: err %v, badBody %v; want an error and badBody", err, x2.badBody.Load())
	}
}
