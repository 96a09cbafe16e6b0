package e2e

import (
	"fmt"
	"net"
	"net/http"
	"testing"
)

// redirectOf sends GET path for host to a plain listener and returns the
// status and Location (no redirect followed).
func redirectOf(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Host = host
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Location")
}

// TestTLSRedirectToTheRoutesListener: plain HTTP to a TLS route is
// redirected to a TLS listener the route serves on (its listeners=, else
// the first TLS listener), on that listener's public port when it has
// one: a listener on :443 in a container published as 41443 says
// public-port=41443, and the Location carries 41443.
func TestTLSRedirectToTheRoutesListener(t *testing.T) {
	t.Run("the route's own listener", func(t *testing.T) {
		p := startLevee(t, "--docker=false", "--listen", "first=127.0.0.1:0,tls", "--listen", "second=127.0.0.1:0,tls")
		_, first, _ := net.SplitHostPort(p.listenerAddr("first"))
		_, second, _ := net.SplitHostPort(p.listenerAddr("second"))
		createEntrypoint(t, p, `{"name":"any","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["any.test"],"tls":true}}`)
		createEntrypoint(t, p, `{"name":"own","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["own.test"],"tls":true,"listeners":["second"]}}`)
		createEntrypoint(t, p, `{"name":"plainonly","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["plainonly.test"],"tls":true,"listeners":["web"]}}`)
		waitFor(t, "the redirects", func() error {
			for _, c := range []struct{ host, want string }{
				{"any.test", "https://any.test:" + first + "/x?y=1"},
				{"own.test", "https://own.test:" + second + "/x?y=1"},
			} {
				if st, loc := redirectOf(t, p.ProxyAddr, c.host, "/x?y=1"); st != http.StatusPermanentRedirect || loc != c.want {
					return fmt.Errorf("%s: %d Location %q, want 308 %q", c.host, st, loc, c.want)
				}
			}
			return nil
		})
		// Served on web itself (listeners=web), so not redirected there.
		if st, loc := redirectOf(t, p.ProxyAddr, "plainonly.test", "/x"); st == http.StatusPermanentRedirect {
			t.Errorf("a route that serves on the plain listener was redirected to %q", loc)
		}
	})
	t.Run("public port", func(t *testing.T) {
		p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls,public-port=41443")
		createEntrypoint(t, p, `{"name":"shop","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["shop.test"],"tls":true}}`)
		waitFor(t, "the redirect", func() error {
			want := "https://shop.test:41443/x"
			if st, loc := redirectOf(t, p.ProxyAddr, "shop.test:8080", "/x"); st != http.StatusPermanentRedirect || loc != want {
				return fmt.Errorf("%d Location %q, want 308 %q", st, loc, want)
			}
			return nil
		})
	})
	t.Run("public port 443 is left out", func(t *testing.T) {
		p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls,public-port=443")
		createEntrypoint(t, p, `{"name":"shop","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["shop.test"],"tls":true}}`)
		waitFor(t, "the redirect", func() error {
			want := "https://shop.test/x"
			if st, loc := redirectOf(t, p.ProxyAddr, "shop.test:8080", "/x"); st != http.StatusPermanentRedirect || loc != want {
				return fmt.Errorf("%d Location %q, want 308 %q", st, loc, want)
			}
			return nil
		})
	})
}
