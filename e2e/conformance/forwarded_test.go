package conformance

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Forwarding headers from a client Levee does not trust (the suite sets no
// --trusted-proxies): whatever the client claims, the backend reads
// X-Forwarded-For, -Host and -Proto as Levee saw the request, once each,
// and no other X-Forwarded-* field (frameworks build URLs from -Port,
// -Prefix, -Ssl), no Forwarded, X-Real-IP or Front-End-Https, and no
// field name with an underscore (the suite runs with the default
// --underscore-headers=delete; CGI-style gateways read X_Forwarded_For
// as X-Forwarded-For).

var forwardedVectors = []struct{ name, fields string }{
	{"forwarded", "Forwarded: for=6.6.6.6;host=evil.test;proto=https\r\n"},
	{"x-real-ip", "X-Real-IP: 6.6.6.6\r\n"},
	{"x-real-ip-underscore", "X_Real_IP: 6.6.6.6\r\n"},
	{"x-forwarded-for", "X-Forwarded-For: 6.6.6.6\r\n"},
	{"x-forwarded-for-lowercase", "x-forwarded-for: 6.6.6.6\r\n"},
	{"x-forwarded-for-twice", "X-Forwarded-For: 6.6.6.6\r\nX-Forwarded-For: 7.7.7.7\r\n"},
	{"x-forwarded-for-underscore", "X_Forwarded_For: 6.6.6.6\r\n"},
	{"x-forwarded-host", "X-Forwarded-Host: evil.test\r\n"},
	{"x-forwarded-host-underscore", "X_Forwarded_Host: evil.test\r\n"},
	{"x-forwarded-proto", "X-Forwarded-Proto: https\r\n"},
	{"x-forwarded-proto-underscore", "X_Forwarded_Proto: https\r\n"},
	{"connection-nominates-x-forwarded-for", "Connection: X-Forwarded-For\r\nX-Forwarded-For: 6.6.6.6\r\n"},
	{"x-forwarded-port", "X-Forwarded-Port: 444\r\n"},
	{"x-forwarded-prefix", "X-Forwarded-Prefix: /evil\r\n"},
	{"x-forwarded-server", "X-Forwarded-Server: evil.test\r\n"},
	{"x-forwarded-ssl", "X-Forwarded-Ssl: on\r\n"},
	{"x-forwarded-scheme", "X-Forwarded-Scheme: https\r\n"},
	{"x-forwarded-uri", "X-Forwarded-Uri: /evil\r\n"},
	{"x-forwarded-method", "X-Forwarded-Method: DELETE\r\n"},
	{"x-forwarded-tls-client-cert", "X-Forwarded-Tls-Client-Cert: MIIBszCCAVmgAwIBAgIU\r\n"},
	{"x-forwarded-any-lowercase", "x-forwarded-whatever: 1\r\n"},
	{"x-forwarded-port-underscore", "X_Forwarded_Port: 444\r\n"},
	{"x-forwarded-prefix-mixed", "X-Forwarded_Prefix: /evil\r\n"},
	{"front-end-https", "Front-End-Https: on\r\n"},
	{"front-end-https-underscore", "Front_End_Https: on\r\n"},
	{"x-levee-fallback-underscore", "X_Levee_Fallback: other\r\n"},
	{"x-auth-user-underscore", "X_Auth_User: admin\r\n"},
	{"x-forwarded-port-dots", "X.Forwarded.Port: 444\r\n"},
	{"x-auth-user-dots", "X.Auth.User: admin\r\n"},
	{"x-auth-user-tilde", "X~Auth~User: admin\r\n"},
	{"all-at-once", "Forwarded: for=6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nX_Forwarded_For: 6.6.6.6\r\nX-Forwarded-For: 6.6.6.6\r\n" +
		"X-Forwarded-Host: evil.test\r\nX-Forwarded-Proto: https\r\n"},
}

func forwardedSuite() []vector {
	var out []vector
	for _, fv := range forwardedVectors {
		out = append(out, vector{name: fv.name, run: func(t *testing.T, e *env) { runForwarded(t, e, fv.fields) }})
	}
	return append(out, headerScreenVectors()...)
}

func runForwarded(t *testing.T, e *env, fields string) {
	v := e.start(t, backendOpts{}, nil, nil)
	c := v.dial()
	if err := c.send(v.expand(getWith(fields))); err != nil {
		t.Fatal(err)
	}
	_, m, err := c.final("GET", 5*time.Second)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	if m.status != 200 || string(m.body) != "answer:/v" {
		v.Errorf("answer %q %q, want the backend's answer", m.start, m.body)
	}
	v.checkBackendRead([]string{"GET /v"})
	reqs := v.b.requests()
	if len(reqs) == 0 {
		return
	}
	r := reqs[0]
	proto := "http"
	if e.tls {
		proto = "https"
	}
	for name, want := range map[string]string{
		"X-Forwarded-For":   "127.0.0.1",
		"X-Forwarded-Host":  v.host,
		"X-Forwarded-Proto": proto,
	} {
		if got := r.get(name); len(got) != 1 || got[0] != want {
			v.Errorf("the backend read %s %q, want exactly %q (head %q)", name, got, want, r.head)
		}
	}
	for _, f := range r.fields {
		norm := cgiNorm(f.name)
		switch {
		case norm == "forwarded", norm == "x-real-ip":
			v.Errorf("the backend read the client's %s: %q", f.name, f.value)
		case norm == "front-end-https":
			v.Errorf("the backend read the client's %s: %q", f.name, f.value)
		case norm != strings.ToLower(f.name):
			v.Errorf("the backend read the client's %s: %q (an underscore or punctuation spelling, read by CGI-style gateways as %s)", f.name, f.value, norm)
		case strings.HasPrefix(norm, "x-forwarded-") && norm != "x-forwarded-for" && norm != "x-forwarded-host" && norm != "x-forwarded-proto":
			v.Errorf("the backend read the client's %s: %q (only a trusted proxy may say it)", f.name, f.value)
		}
	}
}

// headerScreenVectors are requests a policy and a backend could read two
// ways: refused 400 bad-header before any policy or backend reads them,
// or passed with the ambiguous part removed.
func headerScreenVectors() []vector {
	twoAuth := "Authorization: Basic YWxpY2U6c2VjcmV0\r\nAuthorization: Basic YWRtaW46YWRtaW4=\r\n"
	return []vector{
		{name: "authorization-twice", run: func(t *testing.T, e *env) {
			v := e.start(t, backendOpts{}, nil, nil)
			v.refused(getWith(twoAuth))
		}},
		{name: "authorization-twice-basic-auth", run: func(t *testing.T, e *env) {
			// alice:secret at bcrypt cost 4.
			v := e.start(t, backendOpts{}, nil, map[string]any{"basic_auth": map[string]any{
				"users": []string{"alice:$2a$04$3TFdBLi/0nITIvwa8UwjYeQ/X7YhpR09/uo0FQzckZgKGNW1I66uu"}}})
			v.refused(getWith(twoAuth))
		}},
		{name: "forward-auth-api-key-twice", run: func(t *testing.T, e *env) {
			auth := authService(t, nil)
			v := e.start(t, backendOpts{}, nil, map[string]any{"forward_auth": map[string]any{
				"address": auth.URL, "auth_request_headers": []string{"X-Api-Key"}}})
			v.refused(getWith("X-Api-Key: alice\r\nX-Api-Key: bob\r\n"))
		}},
		{name: "forward-auth-identity-underscore", run: func(t *testing.T, e *env) {
			// The auth service vouches for nobody: the backend must read
			// no X-Auth-User in any spelling, and no X-Api-Key but the one
			// the auth service saw.
			auth := authService(t, nil)
			v := e.start(t, backendOpts{}, nil, map[string]any{"forward_auth": map[string]any{
				"address": auth.URL, "auth_response_headers": []string{"X-Auth-User"}, "auth_request_headers": []string{"X-Api-Key"}}})
			c := v.dial()
			if err := c.send(v.expand(getWith("X-Auth-User: admin\r\nX_Auth_User: admin\r\nx-auth_user: admin\r\nX.Auth.User: admin\r\n" +
				"X-Api-Key: alice\r\nX_Api_Key: bob\r\nX~Api~Key: bob\r\n"))); err != nil {
				t.Fatal(err)
			}
			if _, m, err := c.final("GET", 5*time.Second); err != nil || m.status != 200 {
				v.Fatalf("answer %v %v, want the backend's", m, err)
			}
			v.checkBackendRead([]string{"GET /v"})
			for _, r := range v.b.requests() {
				for _, f := range r.fields {
					switch norm := cgiNorm(f.name); {
					case norm == "x-auth-user":
						v.Errorf("the backend read the client's %s: %q as the identity", f.name, f.value)
					case norm == "x-api-key" && f.value != "alice":
						v.Errorf("the backend read %s: %q, a key the auth service never saw", f.name, f.value)
					}
				}
			}
		}},
	}
}

// refused sends req and checks that Levee answered it 400 bad-header and
// that no backend read it.
func (v *vt) refused(req string) {
	v.Helper()
	c := v.dial()
	if err := c.send(v.expand(req)); err != nil {
		v.Fatal(err)
	}
	_, m, err := c.final("GET", 5*time.Second)
	if err != nil {
		v.Fatalf("no answer: %v", err)
	}
	if m.status != 400 || m.get("X-Levee-Diagnostic") == nil || m.get("X-Levee-Diagnostic")[0] != "bad-header" {
		v.Errorf("answer %q %q, want 400 bad-header", m.head, m.body)
	}
	v.checkBackendRead(nil)
}

// authService is a forward-auth service that lets every request through
// (answering 2xx without identity fields), calling seen with each.
func authService(t *testing.T, seen func(*http.Request)) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen != nil {
			seen(r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// cgiNorm is name as a CGI-style gateway may read it, in lower case with
// dashes: every byte other than a letter or a digit becomes '-'
// (HTTP_X_AUTH_USER for X_Auth_User and X.Auth.User alike).
func cgiNorm(name string) string {
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
