package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// acceptCounter counts the connections a backend accepted.
type acceptCounter struct {
	net.Listener
	n *atomic.Int64
}

func (l acceptCounter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// A route's maxRequestBodyBytes, set through the API, is enforced by the
// binary over HTTP/1.1 and HTTP/2: a Content-Length over it gets 413
// body-too-large and the backend never gets a connection; a body at the
// limit is forwarded whole; a chunked body over it gets 413.
func TestBodyLimitThroughTheBinary(t *testing.T) {
	var accepts atomic.Int64
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			return
		}
		fmt.Fprintf(w, "got %d", n)
	}))
	backend.Listener = acceptCounter{Listener: backend.Listener, n: &accepts}
	backend.Start()
	defer backend.Close()

	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls")
	secure := p.listenerAddr("websecure")
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	for _, r := range []struct{ name, tls string }{{"lim", "false"}, {"lims", "true"}} {
		out := createEntrypoint(t, p, fmt.Sprintf(`{"name":%q,"backends":[{"address":%q,"port":%s}],`+
			`"config":{"hostnames":[%q],"tls":%s,"max_request_body_bytes":"1KiB"}}`, r.name, host, port, r.name+".test", r.tls))
		if ds, _ := out["diagnostics"].([]any); len(ds) != 0 {
			t.Fatalf("entrypoint %s: diagnostics %v", r.name, ds)
		}
	}
	plain := &http.Client{}
	h2 := httpsClient(secure, nil)
	h2.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	post := func(c *http.Client, url, body string, chunked bool) (int, string, string, int, error) {
		var r io.Reader = strings.NewReader(body)
		if chunked {
			r = io.MultiReader(r) // hides the length: sent chunked (HTTP/1.1) or without content-length (HTTP/2)
		}
		req, _ := http.NewRequest(http.MethodPost, url, r)
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", "", 0, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("X-Levee-Diagnostic"), string(b), resp.ProtoMajor, nil
	}
	for _, c := range []struct {
		name   string
		client *http.Client
		url    string
		proto  int
	}{
		{"HTTP/1.1", plain, p.proxyURL() + "/up", 1},
		{"HTTP/2", h2, "https://lims.test/up", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := func(body string, chunked bool) (int, string, string) {
				t.Helper()
				code, diag, got, proto, err := post(c.client, c.url, body, chunked)
				if err != nil {
					t.Fatal(err)
				}
				if proto != c.proto {
					t.Fatalf("answered over HTTP/%d, want HTTP/%d", proto, c.proto)
				}
				return code, diag, got
			}
			if c.proto == 1 {
				c.client.Transport = hostTransport("lim.test")
			}
			waitFor(t, "the route", func() error {
				if code, _, got := req("hello", false); code != http.StatusOK || got != "got 5" {
					return fmt.Errorf("%d %q", code, got)
				}
				return nil
			})
			before := accepts.Load()
			if code, diag, _ := req(strings.Repeat("x", 1025), false); code != http.StatusRequestEntityTooLarge || diag != "body-too-large" {
				t.Fatalf("Content-Length over the limit: %d %q, want 413 body-too-large", code, diag)
			}
			if n := accepts.Load() - before; n != 0 {
				t.Fatalf("the backend accepted %d connections for a body over the limit", n)
			}
			if code, _, got := req(strings.Repeat("x", 1024), false); code != http.StatusOK || got != "got 1024" {
				t.Fatalf("a body at the limit: %d %q, want 200 and all of it", code, got)
			}
			if code, diag, _ := req(strings.Repeat("x", 8<<10), true); code != http.StatusRequestEntityTooLarge || diag != "body-too-large" {
				t.Fatalf("unsized body over the limit: %d %q, want 413 body-too-large", code, diag)
			}
		})
	}
	if m := metrics(t, p); !strings.Contains(m, `levee_client_errors_total{reason="body_too_large"} 4`) {
		t.Errorf("client errors:\n%s", grepLines(m, "levee_client_errors_total"))
	}
}

// hostTransport sends every request with Host host.
func hostTransport(host string) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Host = host
		return http.DefaultTransport.RoundTrip(r)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
