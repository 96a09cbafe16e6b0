// Package forwardauth is the forward-auth policy: before each request,
// Levee asks an auth service. Its 2xx lets the request through, with the
// chosen headers of that answer (authResponseHeaders) copied onto the
// request the backend gets; any other answer (401, 403, a 302 to a login
// page) goes back to the client as the auth service wrote it, with
// X-Levee-Diagnostic: unauthorized.
//
// The auth request is a GET to the configured address carrying the
// client's headers (only authRequestHeaders when set; never hop-by-hop
// ones, never a body) and X-Forwarded-Method, -Proto, -Host, -Uri and
// -For describing the client's request. The client's own X-Forwarded-*
// are passed only with trustForwardHeader (and, behind Levee's request
// path, only those a trusted proxy sent: a client's are removed before
// any policy runs).
//
// What the backend reads as the identity and the credentials is what the
// auth service saw: the other spellings of authResponseHeaders and
// authRequestHeaders (X_Auth_User, X.Auth.User, which CGI-style gateways
// read as X-Auth-User) are removed, and a request carrying one of the
// authRequestHeaders twice (Cookie excepted, which HTTP/2 splits) is
// refused 400 with X-Levee-Diagnostic: bad-header.
//
// The auth service has its own timeout (forwardAuth.timeout) and client.
// When it cannot be asked (connection refused, timeout, a broken answer)
// the request is refused with 503 and X-Levee-Diagnostic:
// auth-unavailable, never let through. None of this touches the route's
// breaker or its backends' health: the auth service is not the route's
// backend. Redirects from the auth service are not followed: they are
// the answer for the client.
package forwardauth

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/fieldname"
	"github.com/levee-proxy/levee/router/policy"
)

// Name is the policy's name in metrics and logs.
const Name = "forward-auth"

// maxAuthBody bounds the auth service's answer relayed to a refused
// client.
const maxAuthBody = 64 << 10

// hopByHop are the fields that describe one connection (RFC 9110 7.6.1).
var hopByHop = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// Policy is one route's compiled forward auth.
type Policy struct {
	address  string
	timeout  time.Duration
	trustFwd bool
	respHdrs []string
	reqHdrs  []string
	// spelled are respHdrs and reqHdrs: the fields whose other
	// spellings (fieldname.Equal) never pass this policy.
	spelled []string
	client  *http.Client
	env     policy.Env
	deny    bool
	ref     policy.Refuser
}

// New compiles cfg; rt is the auth services' shared transport. A bad
// address gives an error and a Policy that refuses every request.
func New(cfg *config.ForwardAuth, rt http.RoundTripper, env policy.Env) (*Policy, error) {
	p := &Policy{
		address:  cfg.Address,
		timeout:  cfg.Timeout,
		trustFwd: cfg.TrustForwardHeader,
		respHdrs: cfg.AuthResponseHeaders,
		reqHdrs:  cfg.AuthRequestHeaders,
		env:      env,
		ref:      env.Refuser(Name),
		spelled:  append(append([]string(nil), cfg.AuthResponseHeaders...), cfg.AuthRequestHeaders...),
		client: &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}},
	}
	if p.timeout <= 0 {
		p.timeout = config.DefaultForwardAuthTimeout
	}
	if err := config.CheckForwardAddress(cfg.Address); err != nil {
		p.deny = true
		return p, fmt.Errorf("forwardAuth: %w", err)
	}
	return p, nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageAuth }

// Serve implements policy.Policy.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if p.deny {
		p.ref.Refuse(w, http.StatusForbidden, policy.ReasonPolicyMisconfigured, "access policy misconfigured\n")
		return
	}
	// The identity the auth service vouches for, and the credentials it
	// reads, must be the only ones a backend can read: no other
	// spelling (which CGI-style gateways read as the same field) and no
	// second value of a credential (the auth service may read the first
	// and the backend the last).
	fieldname.DeleteAliases(r.Header, p.spelled)
	for _, k := range p.reqHdrs {
		if len(r.Header[k]) > 1 && k != "Cookie" {
			p.ref.Refuse(w, http.StatusBadRequest, policy.ReasonBadHeader, "more than one "+k+" field\n")
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	resp, err := p.client.Do(p.authRequest(ctx, r))
	if err != nil {
		if r.Context().Err() != nil {
			return // the client left: nothing to answer
		}
		p.ref.Refuse(w, http.StatusServiceUnavailable, policy.ReasonAuthUnavailable, "authentication service unavailable\n")
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		for _, k := range p.respHdrs {
			if v := resp.Header.Values(k); len(v) > 0 {
				r.Header[k] = v
			} else {
				delete(r.Header, k) // the client cannot supply it itself
			}
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAuthBody))
		next.ServeHTTP(w, r)
		return
	}
	p.relay(w, resp)
}

// authRequest builds the request to the auth service.
func (p *Policy) authRequest(ctx context.Context, r *http.Request) *http.Request {
	ar, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.address, nil) // the address was checked
	if len(p.reqHdrs) > 0 {
		for _, k := range p.reqHdrs {
			if v := r.Header.Values(k); len(v) > 0 {
				ar.Header[k] = v
			}
		}
	} else {
		for k, v := range r.Header {
			ar.Header[k] = v
		}
	}
	for _, k := range hopByHop {
		ar.Header.Del(k)
	}
	ar.Header.Del("Content-Length")
	ip := ""
	if a, ok := policy.ClientIP(r, p.env.TrustedProxies, 0); ok {
		ip = a.String()
	}
	if !p.trustFwd {
		for _, k := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Uri", "X-Forwarded-Method", "Forwarded", "X-Real-Ip"} {
			ar.Header.Del(k)
		}
	}
	setIfAbsent(ar.Header, "X-Forwarded-Method", r.Method)
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	setIfAbsent(ar.Header, "X-Forwarded-Proto", proto)
	setIfAbsent(ar.Header, "X-Forwarded-Host", r.Host)
	setIfAbsent(ar.Header, "X-Forwarded-Uri", r.URL.RequestURI())
	if ip != "" {
		if prior := ar.Header.Values("X-Forwarded-For"); len(prior) > 0 && p.trustFwd {
			ar.Header.Set("X-Forwarded-For", strings.Join(prior, ", ")+", "+peer(r))
		} else {
			ar.Header.Set("X-Forwarded-For", ip)
		}
	}
	return ar
}

func peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func setIfAbsent(h http.Header, k, v string) {
	if len(h[k]) == 0 {
		h[k] = []string{v}
	}
}

// relay sends the auth service's refusal to the client.
func (p *Policy) relay(w http.ResponseWriter, resp *http.Response) {
	h := w.Header()
	for k, v := range resp.Header {
		h[k] = v
	}
	for _, k := range hopByHop {
		h.Del(k)
	}
	h.Del("Content-Length") // the body may be cut at maxAuthBody
	h.Set(policy.HeaderDiagnostic, policy.ReasonUnauthorized)
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, io.LimitReader(resp.Body, maxAuthBody))
	p.ref.Count(policy.ReasonUnauthorized)
}
