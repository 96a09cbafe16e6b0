package proxy

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/fieldname"
)

// rawGet sends a GET for host with the raw header lines fields over a new
// connection to the front and returns the answer.
func (h *harness) rawGet(host, fields string) *http.Response {
	h.t.Helper()
	conn := h.dialFront()
	fmt.Fprintf(conn, "GET /v HTTP/1.1\r\nHost: %s\r\n%sConnection: close\r\n\r\n", host, fields)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		h.t.Fatalf("reading the answer: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// spoofed are forwarding fields a client may make up, in the spellings a
// client may use; none reaches the backend from an untrusted peer.
const spoofed = "X-Forwarded-Port: 444\r\nX-Forwarded-Prefix: /evil\r\nX-Forwarded-Server: evil\r\n" +
	"X-Forwarded-Ssl: on\r\nX-Forwarded-Scheme: https\r\nX-Forwarded-Uri: /evil\r\nX-Forwarded-Method: DELETE\r\n" +
	"X-Forwarded-Tls-Client-Cert: MIIB\r\nx-forwarded-anything: 1\r\nFront-End-Https: on\r\nX-Real-IP: 6.6.6.6\r\n" +
	"Forwarded: for=6.6.6.6;proto=https\r\nX-Forwarded-For: 6.6.6.6\r\nX-Forwarded-Host: evil.test\r\nX-Forwarded-Proto: https\r\n"

// From an untrusted client no forwarding field reaches the backend but
// the three Levee sets, with Levee's values.
func TestUntrustedForwardingFieldsRemoved(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "a")
	h.set(config.SourceAPI, ep("fwd", b.backend()))
	if resp := h.rawGet("fwd.test", spoofed); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	seen := b.last().Header
	for k, v := range seen {
		if spoofableField(k) {
			want := map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Host": "fwd.test", "X-Forwarded-Proto": "http"}[k]
			if len(v) != 1 || v[0] != want {
				t.Errorf("the backend read %s %q, want %q", k, v, want)
			}
		}
	}
	if len(seen) == 0 || seen.Get("X-Forwarded-For") == "" {
		t.Errorf("the backend read no forwarding fields: %v", seen)
	}
}

// A trusted proxy's forwarding fields pass, all of them.
func TestTrustedForwardingFieldsKept(t *testing.T) {
	h := newHarness(t, Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	b := newBackend(t, "a")
	h.set(config.SourceAPI, ep("fwd", b.backend()))
	if resp := h.rawGet("fwd.test", spoofed); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	seen := b.last().Header
	for k, want := range map[string]string{"X-Forwarded-Port": "444", "X-Forwarded-Prefix": "/evil", "X-Forwarded-Ssl": "on",
		"Front-End-Https": "on", "X-Real-Ip": "6.6.6.6", "Forwarded": "for=6.6.6.6;proto=https",
		"X-Forwarded-For": "6.6.6.6, 127.0.0.1", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.test"} {
		if got := seen.Get(k); got != want {
			t.Errorf("the backend read %s %q, want %q", k, got, want)
		}
	}
}

// underscored are underscore (and other punctuation) spellings of
// fields Levee owns, and one of a field it does not.
const underscored = "X_Forwarded_Port: 444\r\nx_forwarded_for: 6.6.6.6\r\nX-Forwarded_Proto: https\r\nX_Real_IP: 6.6.6.6\r\n" +
	"X_Levee_Fallback: other\r\nX_LEVEE_ANYTHING: 1\r\nFront_End_Https: on\r\nTransfer_Encoding: chunked\r\n" +
	"Content_Length: 5\r\nKeep_Alive: 1\r\nX.Forwarded.Host: evil.test\r\nX~Levee~Stale: 1\r\nX+Real+Ip: 6.6.6.6\r\n" +
	"X_Custom: kept\r\n"

// With every --underscore-headers choice, the underscore spellings of the
// fields Levee owns never reach the backend, from a trusted peer or not;
// others go as the choice says.
func TestUnderscoreHeaders(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	for _, c := range []struct {
		name     string
		opts     Options
		status   int
		keepsOne bool // X_Custom reaches the backend
	}{
		{"default", Options{}, 200, false},
		{"delete", Options{UnderscoreHeaders: UnderscoreDelete}, 200, false},
		{"keep", Options{UnderscoreHeaders: UnderscoreKeep}, 200, true},
		{"keep-trusted", Options{UnderscoreHeaders: UnderscoreKeep, TrustedProxies: trusted}, 200, true},
		{"reject", Options{UnderscoreHeaders: UnderscoreReject}, 400, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.opts)
			b := newBackend(t, "a")
			h.set(config.SourceAPI, ep("us", b.backend()))
			resp := h.rawGet("us.test", underscored)
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			if c.status != 200 {
				if d := resp.Header.Get(HeaderDiagnostic); d != DiagnosticBadHeader {
					t.Errorf("diagnostic %q, want %q", d, DiagnosticBadHeader)
				}
				if b.hits.Load() != 0 {
					t.Error("the backend was asked")
				}
				return
			}
			seen := b.last().Header
			for k, v := range seen {
				if !fieldname.Plain(k) && k != "X_custom" {
					t.Errorf("the backend read %s %q", k, v)
				}
			}
			if got := len(seen["X_custom"]) == 1; got != c.keepsOne {
				t.Errorf("X_Custom reached the backend: %v, want %v (%v)", got, c.keepsOne, seen)
			}
		})
	}
}

// Two Authorization fields: a policy would check one and a backend may
// read the other. Refused on every route, policy or not.
func TestTwoAuthorizationFieldsRefused(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "a")
	h.set(config.SourceAPI, ep("auth", b.backend()))
	resp := h.rawGet("auth.test", "Authorization: Basic YWxpY2U6c2VjcmV0\r\nAuthorization: Basic YWRtaW46eA==\r\n")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get(HeaderDiagnostic) != DiagnosticBadHeader {
		t.Fatalf("%d %v, want 400 %s", resp.StatusCode, resp.Header, DiagnosticBadHeader)
	}
	if b.hits.Load() != 0 {
		t.Error("the backend was asked")
	}
	if resp := h.rawGet("auth.test", "Authorization: Basic YWxpY2U6c2VjcmV0\r\n"); resp.StatusCode != 200 {
		t.Errorf("one Authorization: %d", resp.StatusCode)
	}
}

// With --underscore-headers=keep, a forward-auth route whose auth service
// says nothing of X-Auth-User passes none of the client's spellings.
func TestForwardAuthRouteUnderscoreIdentity(t *testing.T) {
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(auth.Close)
	h := newHarness(t, Options{UnderscoreHeaders: UnderscoreKeep})
	b := newBackend(t, "a")
	e := ep("fa", b.backend())
	e.Access.ForwardAuth = &config.ForwardAuth{Address: auth.URL, AuthResponseHeaders: []string{"X-Auth-User"}, Timeout: 5 * time.Second}
	h.set(config.SourceAPI, e)
	if resp := h.rawGet("fa.test", "X-Auth-User: admin\r\nX_Auth_User: admin\r\nx-auth_user: admin\r\nX.Auth.User: admin\r\n"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for k, v := range b.last().Header {
		if fieldname.Equal(k, "X-Auth-User") {
			t.Errorf("the backend read %s %q", k, v)
		}
	}
}

// The header screen costs no allocation on a request without underscores
// or forwarding fields, nor on one with them.
func TestScreenHeadersAllocs(t *testing.T) {
	p := New(nil, Options{})
	defer p.Close()
	req := httptest.NewRequest(http.MethodGet, "http://web.test/", nil)
	req.Header = http.Header{"Accept": {"*/*"}, "User-Agent": {"x"}, "Authorization": {"Basic eA=="}, "Cookie": {"a=1"}}
	x := &exchange{p: p, req: req}
	if n := testing.AllocsPerRun(100, func() { x.screenHeaders() }); n != 0 {
		t.Errorf("%v allocations per request, want none", n)
	}
}
