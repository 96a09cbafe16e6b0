package proxy

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// silentBackend is an address whose connects time out: a socket listening
// with a backlog of zero whose queue is already full, so the kernel drops
// every further SYN, as for an address Levee has no route to.
func silentBackend(t *testing.T) config.Backend {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Fill the accept queue; the first connect that times out proves it.
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				break
			}
			t.Fatalf("fill the backlog of %s: %v", addr, err)
		}
		t.Cleanup(func() { c.Close() })
		if i > 16 {
			t.Skipf("the kernel accepts every connect to a full backlog of %s: no silent address here", addr)
		}
	}
	return config.Backend{Address: "127.0.0.1", Port: port, Weight: config.DefaultWeight, Name: "silent"}
}

// A connect that times out is not a refusal: the backend is ejected at
// once all the same (it never got the request, which goes to another
// backend), and the ejection says that nothing answered, with
// connect=timeout, where it used to say "it refused a connection". A
// refused connect still says so, with connect=refused.
func TestEjectionSaysWhyTheConnectFailed(t *testing.T) {
	cases := []struct {
		name    string
		backend func(*testing.T) config.Backend
		msg     string
		connect string
	}{
		{"timeout", silentBackend, "backend ejected: connecting to it timed out", `"connect":"timeout"`},
		{"refused", deadBackend, "backend ejected: it refused a connection", `"connect":"refused"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, Options{DialTimeout: 300 * time.Millisecond})
			good := newBackend(t, "good")
			h.set(config.SourceDocker, ep("web", tc.backend(t), good.backend()))
			for i := 0; i < 2; i++ {
				resp := h.do(http.MethodGet, "web.test", "/", nil)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("request %d: %d, want 200 from the other backend", i, resp.StatusCode)
				}
			}
			logs := h.logs.String()
			var line string
			for _, l := range strings.Split(logs, "\n") {
				if strings.Contains(l, `"event":"backend_ejected"`) {
					line = l
				}
			}
			if !strings.Contains(line, tc.msg) || !strings.Contains(line, tc.connect) {
				t.Fatalf("ejection line %q: want %q and %s; logs:\n%s", line, tc.msg, tc.connect, logs)
			}
			if tc.name == "timeout" && strings.Contains(line, "refused a connection") {
				t.Fatalf("a timeout worded as a refusal: %q", line)
			}
		})
	}
}
