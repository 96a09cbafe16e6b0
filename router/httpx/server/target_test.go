package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// startStdlib serves handler with net/http's server until the test ends,
// for tests that take its answer as the expected one.
func startStdlib(t *testing.T, handler http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(handler)
	t.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

// statusLine sends raw on a new connection to addr and returns the first
// line of the answer ("" if the connection ended without one).
func statusLine(t *testing.T, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSuffix(line, "\r\n")
}

// TestInvalidTargetAnswered400: a request target that net/url refuses
// (control bytes, no leading slash, a bad escape) is answered as net/http's
// server answers it, 400, with the refusal header and Connection: close;
// a parse error is not a broken connection.
func TestInvalidTargetAnswered400(t *testing.T) {
	edgeAddr := start(t, &Server{Handler: echo, RefusalHeader: http.Header{"X-Levee-Diagnostic": {"bad-request"}}})
	stdAddr := startStdlib(t, echo)
	for _, target := range []string{
		"foo",
		"foo/bar",
		"/a\x00b",
		"/a\rb",
		"/a\tb",
		"/a\x7fb",
		"/a\x01b",
		"/%zz",
		"http://[::1/",
		"/ok?q=\x00",
	} {
		raw := "GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n"
		want := statusLine(t, stdAddr, raw)
		if want == "" {
			t.Fatalf("%q: net/http's server did not answer", target)
		}
		c := dial(t, edgeAddr)
		c.send(raw)
		line, err := c.br.ReadString('\n')
		if got := strings.TrimSuffix(line, "\r\n"); got != want {
			t.Errorf("%q: edge answered %q (%v), net/http %q", target, got, err, want)
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(io.MultiReader(strings.NewReader(line), c.br)), nil)
		if err != nil {
			t.Fatalf("%q: %v", target, err)
		}
		if resp.StatusCode == http.StatusBadRequest {
			if d := resp.Header.Get("X-Levee-Diagnostic"); d != "bad-request" || !resp.Close {
				t.Errorf("%q: refusal header %q, Connection: close %v", target, d, resp.Close)
			}
		}
		resp.Body.Close()
	}
}
