package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router/proxy"
)

// TestProxyServerRefusalsCarryTheDiagnostic: a request the proxy
// listener's server refuses before routing is answered with
// X-Levee-Diagnostic: bad-request (levee's server), as every answer of
// Levee's own is; net/http's server (--http-server=stdlib) gives none.
func TestProxyServerRefusalsCarryTheDiagnostic(t *testing.T) {
	for _, tc := range []struct {
		kind, want string
	}{{"levee", proxy.DiagnosticBadRequest}, {"stdlib", ""}} {
		t.Run(tc.kind, func(t *testing.T) {
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				t.Errorf("the handler saw a malformed request: %v", r)
			})
			srv := newProxyServer(tc.kind, handler, stdLogger(zerolog.Nop(), "proxy"))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			defer func() {
				srv.Close()
				if err := <-done; !errors.Is(err, http.ErrServerClosed) {
					t.Errorf("Serve: %v", err)
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nBad Header: x\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(proxy.HeaderDiagnostic) != tc.want {
				t.Errorf("got %d with %s %q, want 400 with %q", resp.StatusCode, proxy.HeaderDiagnostic,
					resp.Header.Get(proxy.HeaderDiagnostic), tc.want)
			}
		})
	}
}
