package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/http2"
)

// The header screen of docs/operations.md ("Header fields a backend could
// read two ways") over HTTP/2, through the binary: Go's HTTP/2 server
// hands the request path the same fields as the HTTP/1.1 servers, so the
// same rules hold. On a forward-auth route whose auth service vouches for
// nobody:
//
//   - two authorization fields, or two of the route's x-api-key, are
//     refused 400 bad-header and never reach the backend;
//   - the backend reads no field name with an underscore (x_auth_user,
//     x_forwarded_for), no X-Auth-User, and none of the client's
//     X-Forwarded-Port, -Prefix or Front-End-Https.
func TestHTTP2HeaderScreen(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
	}))
	defer backend.Close()
	auth := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) // 200, no identity
	defer auth.Close()
	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls")
	secure := p.listenerAddr("websecure")
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"h2hdr","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["h2.test"],"tls":true,`+
		`"forward_auth":{"address":%q,"auth_response_headers":["X-Auth-User"],"auth_request_headers":["X-Api-Key"]}}}`, host, port, auth.URL))
	c := httpsClient(secure, nil)
	c.Transport.(*http.Transport).TLSClientConfig.InsecureSkipVerify = true
	waitFor(t, "the route over HTTP/2", func() error {
		resp, err := c.Get("https://h2.test/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			return fmt.Errorf("%d %s", resp.StatusCode, resp.Proto)
		}
		return nil
	})
	mu.Lock()
	before := len(seen)
	mu.Unlock()

	h := dialH2(t, secure, 1<<20)
	ended := func(f http2.Frame) bool {
		return f.Header().Flags.Has(http2.FlagHeadersEndStream) || f.Header().Flags.Has(http2.FlagDataEndStream)
	}
	// In order: a client's stream ids must increase (RFC 9113 5.1.1).
	for _, c := range []struct {
		id     uint32
		fields []string
	}{
		{1, []string{"authorization", "Basic YWxpY2U6c2VjcmV0", "authorization", "Basic YWRtaW46YWRtaW4="}},
		{3, []string{"x-api-key", "alice", "x-api-key", "bob"}},
	} {
		id, fields := c.id, c.fields
		h.headers(id, true, append([]string{":method", "GET", ":path", "/twice"}, fields...)...)
		frames := h.until(t, id, ended)
		if status := h.status(frames, id); status != "400" {
			t.Errorf("stream %d %q: status %q, want 400", id, fields, status)
		}
		if d := h.field(frames, id, "x-levee-diagnostic"); d != "bad-header" {
			t.Errorf("stream %d: diagnostic %q, want bad-header", id, d)
		}
	}
	h.headers(5, true, ":method", "GET", ":path", "/spelled", "x-api-key", "alice", "x_api_key", "bob",
		"x-auth-user", "admin", "x_auth_user", "admin", "x.auth.user", "admin", "x_forwarded_for", "6.6.6.6",
		"x-forwarded-port", "444", "x-forwarded-prefix", "/evil", "front-end-https", "on")
	if status := h.status(h.until(t, 5, ended), 5); status != "200" {
		t.Fatalf("status %q, want the backend's 200", status)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := len(seen) - before; got != 1 {
		t.Errorf("the backend read %d requests, want 1 (the refused ones never reach it)", got)
	}
	got := seen[len(seen)-1]
	for k, v := range got {
		switch {
		case strings.ContainsAny(k, "_."), k == "X-Auth-User", k == "X-Forwarded-Port", k == "X-Forwarded-Prefix", k == "Front-End-Https":
			t.Errorf("the backend read %s %q", k, v)
		}
	}
	if got.Get("X-Api-Key") != "alice" || got.Get("X-Forwarded-For") != "127.0.0.1" {
		t.Errorf("the backend read %v", got)
	}
}

// field is the value of the response field name on stream id among
// frames.
func (h *h2Conn) field(frames []http2.Frame, id uint32, name string) string {
	for _, f := range frames {
		if d, ok := f.(*decodedHeaders); ok && d.StreamID == id {
			for _, hf := range d.fields {
				if hf.Name == name {
					return hf.Value
				}
			}
		}
	}
	return ""
}

// --underscore-headers through the binary: keep passes a field of the
// backend's own with an underscore, but never a spelling of one Levee
// owns or of a forward-auth route's identity; reject answers 400
// bad-header and the backend is not asked.
func TestUnderscoreHeadersFlag(t *testing.T) {
	var mu sync.Mutex
	var seen []http.Header
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
	}))
	defer backend.Close()
	auth := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) // 200, no identity
	defer auth.Close()
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	send := func(p *leveeProc) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/u", nil)
		req.Host = "us.test"
		req.Header["X_Custom"] = []string{"kept"}
		req.Header["X_Auth_User"] = []string{"admin"}
		req.Header["X.Forwarded.Port"] = []string{"444"}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, mode := range []string{"keep", "reject"} {
		t.Run(mode, func(t *testing.T) {
			p := startLevee(t, "--docker=false", "--underscore-headers", mode)
			createEntrypoint(t, p, fmt.Sprintf(`{"name":"us","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["us.test"],`+
				`"forward_auth":{"address":%q,"auth_response_headers":["X-Auth-User"]}}}`, host, port, auth.URL))
			waitFor(t, "the route", func() error {
				req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/ready", nil)
				req.Host = "us.test"
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return err
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			})
			mu.Lock()
			seen = nil
			mu.Unlock()
			resp := send(p)
			mu.Lock()
			defer mu.Unlock()
			if mode == "reject" {
				if resp.StatusCode != 400 || resp.Header.Get("X-Levee-Diagnostic") != "bad-header" || len(seen) != 0 {
					t.Errorf("%d %v, the backend asked %d times; want 400 bad-header and no backend", resp.StatusCode, resp.Header, len(seen))
				}
				return
			}
			if resp.StatusCode != 200 || len(seen) != 1 {
				t.Fatalf("%d, the backend asked %d times; want its 200", resp.StatusCode, len(seen))
			}
			got := seen[0]
			if got.Get("X_custom") != "kept" {
				t.Errorf("the backend's own X_Custom was removed: %v", got)
			}
			for k, v := range got {
				if strings.EqualFold(k, "X_Auth_User") || strings.EqualFold(k, "X.Forwarded.Port") {
					t.Errorf("the backend read %s %q", k, v)
				}
			}
		})
	}
}
