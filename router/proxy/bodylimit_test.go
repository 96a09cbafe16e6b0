package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// countingListener counts the connections a backend accepted.
type countingListener struct {
	net.Listener
	accepts *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepts.Add(1)
	}
	return c, err
}

// bodyBackend reads each request body to its end and answers how many
// bytes it got; it counts the connections it accepted.
type bodyBackend struct {
	accepts atomic.Int64
	srv     *httptest.Server
}

func newBodyBackend(t *testing.T) *bodyBackend {
	t.Helper()
	b := &bodyBackend{}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			return // cut off by the proxy: nothing to answer
		}
		fmt.Fprintf(w, "got %d", n)
	}))
	b.srv.Listener = countingListener{Listener: b.srv.Listener, accepts: &b.accepts}
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bodyBackend) backend() config.Backend {
	a := b.srv.Listener.Addr().(*net.TCPAddr)
	return config.Backend{Address: "127.0.0.1", Port: a.Port, Weight: config.DefaultWeight, Name: "body"}
}

// unsized hides a body's length: the client sends it chunked.
type unsized struct{ r io.Reader }

func (u unsized) Read(p []byte) (int, error) { return u.r.Read(p) }

// send posts body (chunked when chunked) and returns status, diagnostic
// and the answer's body.
func send(t *testing.T, h *harness, method string, body string, chunked bool) (int, string, string) {
	t.Helper()
	var r io.Reader = strings.NewReader(body)
	if chunked {
		r = unsized{r}
	}
	resp := h.do(method, "web.test", "/", r)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get(HeaderDiagnostic), string(b)
}

const testBodyLimit = 1000

// A body whose Content-Length is over maxRequestBodyBytes is answered 413
// before any backend is asked: the backend never gets a connection, and
// the route's breaker never hears of it.
func TestBodyOverLimitByContentLengthNeverReachesBackend(t *testing.T) {
	for _, attempts := range []int{1, 3} {
		h := newHarness(t, Options{EjectAfter: 2})
		be := newBodyBackend(t)
		e := withBreaker(ep("web", be.backend()), ratioParams())
		e.MaxRequestBodyBytes = testBodyLimit
		e.Retry.Attempts = attempts
		h.set(config.SourceAPI, e)
		for i := 0; i < 6; i++ {
			code, diag, _ := send(t, h, http.MethodPost, strings.Repeat("x", testBodyLimit+1), false)
			if code != http.StatusRequestEntityTooLarge || diag != DiagnosticBodyTooLarge {
				t.Fatalf("attempts=%d: got %d %q, want 413 %s", attempts, code, diag, DiagnosticBodyTooLarge)
			}
		}
		if n := be.accepts.Load(); n != 0 {
			t.Fatalf("attempts=%d: the backend accepted %d connections, want none", attempts, n)
		}
		st, _ := h.r.Breaker("web")
		if st.State != "closed" || st.Failures != 0 {
			t.Fatalf("attempts=%d: breaker %s with %d failures, want closed with none", attempts, st.State, st.Failures)
		}
		code, _, got := send(t, h, http.MethodPost, strings.Repeat("x", testBodyLimit), false)
		if code != http.StatusOK || got != fmt.Sprintf("got %d", testBodyLimit) {
			t.Fatalf("attempts=%d: a body at the limit got %d %q, want 200 and all of it", attempts, code, got)
		}
	}
}

// A chunked body is cut off at the limit, whether it is read ahead (small
// buffer or retries) or streams to the backend: 413, never a failure of
// the backend. A chunked body exactly at the limit passes whole.
func TestChunkedBodyOverLimitIsCutOff(t *testing.T) {
	cases := []struct {
		name       string
		attempts   int
		bodyBuffer int64
	}{
		{"read ahead for retries", 3, 0},
		{"streamed", 1, 0},
		{"streamed after a read-ahead part", 3, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Options{EjectAfter: 2})
			be := newBodyBackend(t)
			e := withBreaker(ep("web", be.backend()), ratioParams())
			e.MaxRequestBodyBytes = testBodyLimit
			e.Retry.Attempts = c.attempts
			e.Retry.BodyBuffer = c.bodyBuffer
			h.set(config.SourceAPI, e)
			for i := 0; i < 6; i++ {
				code, diag, _ := send(t, h, http.MethodPost, strings.Repeat("y", 5*testBodyLimit), true)
				if code != http.StatusRequestEntityTooLarge || diag != DiagnosticBodyTooLarge {
					t.Fatalf("got %d %q, want 413 %s", code, diag, DiagnosticBodyTooLarge)
				}
			}
			st, _ := h.r.Breaker("web")
			if st.State != "closed" || st.Failures != 0 {
				t.Fatalf("breaker %s with %d failures, want closed with none", st.State, st.Failures)
			}
			code, _, got := send(t, h, http.MethodPost, strings.Repeat("y", testBodyLimit), true)
			if code != http.StatusOK || got != fmt.Sprintf("got %d", testBodyLimit) {
				t.Fatalf("a chunked body at the limit got %d %q, want 200 and all of it", code, got)
			}
		})
	}
}

// retry.bodyBuffer raises the size of the body kept for a retry: a 100 KiB
// PUT, over the default 64 KiB, is retried on the other backend when the
// first fails.
func TestRetryBodyBufferReplaysLargerBodies(t *testing.T) {
	for _, buffer := range []int64{0, 1 << 20} {
		h := newHarness(t, Options{})
		bad := newBackend(t, "bad")
		bad.mode.Store(modeFail)
		good := newBodyBackend(t)
		e := ep("web", bad.backend(), good.backend())
		e.Retry.Attempts = 2
		e.Retry.BodyBuffer = buffer
		h.set(config.SourceAPI, e)
		const size = 100 << 10
		failed := 0
		for i := 0; i < 4; i++ {
			code, _, got := send(t, h, http.MethodPut, strings.Repeat("z", size), false)
			switch {
			case code == http.StatusOK && got == fmt.Sprintf("got %d", size):
			case code == http.StatusInternalServerError:
				failed++
			default:
				t.Fatalf("buffer=%d: got %d %q", buffer, code, got)
			}
		}
		if buffer == 0 && failed == 0 {
			t.Fatalf("buffer=0: every 100 KiB PUT succeeded; the default 64 KiB buffer should not replay it")
		}
		if buffer > 0 && failed != 0 {
			t.Fatalf("buffer=%d: %d of 4 PUTs failed, want every one retried on the good backend", buffer, failed)
		}
	}
}
