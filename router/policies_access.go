package router

import (
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/basicauth"
	"github.com/levee-proxy/levee/router/policy/deny"
	"github.com/levee-proxy/levee/router/policy/forwardauth"
	"github.com/levee-proxy/levee/router/policy/inflight"
	"github.com/levee-proxy/levee/router/policy/ipallow"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

// compilePolicies builds the route's policy chain: the access policies
// (which keep their state in the route's registry entry, so that buckets,
// counters and the credentials cache survive a rebuild) and the transform
// policies, sorted by stage. Callers hold r.mu.
func (r *Router) compilePolicies(rt *Route) []diagnostics.Diagnostic {
	env := policy.Env{Route: rt.ep.ID, Rec: r.refusals, Now: r.clock.Now, TrustedProxies: r.opts.TrustedProxies}
	access, diags := accessPolicies(&rt.ep, rt.state, env, r.authTransport, r.opts.PasswordSlots)
	ps := append(access, transformPolicies(&rt.ep, env, r.opts.Encoders)...)
	rt.chain = policy.NewChain(ps)
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.Name())
	}
	rt.state.retainPolicyState(names)
	return diags
}

// accessPolicies compiles the route's policies that admit or refuse a
// request: IP allow-list, rate and in-flight limits, basic and forward
// auth. A policy whose config is invalid compiles to one that denies
// every request, with a diagnostic (the validator has reported the bad
// value already; these are what only the router sees: a users file that
// cannot be read, a policy without its essential field).
func accessPolicies(ep *config.Entrypoint, rs *RouteState, env policy.Env, authRT http.RoundTripper, slots *basicauth.Slots) ([]policy.Policy, []diagnostics.Diagnostic) {
	a := &ep.Access
	var ps []policy.Policy
	var diags []diagnostics.Diagnostic
	report := func(code diagnostics.Code, key, fallback string, err error) {
		diags = append(diags, diagnostics.New(code, sourceOf(*ep), key, "", fallback, err.Error(), ""))
	}
	warn := func(code diagnostics.Code, key, fallback, msg, hint string) {
		diags = append(diags, diagnostics.New(code, sourceOf(*ep), key, "", fallback, msg, hint))
	}
	if len(a.Unread) > 0 {
		// The validator reported each key (E005, E006).
		ps = append(ps, deny.New(env))
	}
	if c := a.IPAllowList; c != nil {
		p, err := ipallow.New(c, env)
		if err != nil && len(c.SourceRange) == 0 {
			report(diagnostics.BadIPAllowList, "ipAllowList.sourceRange", "route denies every request", err)
		}
		ps = append(ps, p)
	}
	if c := a.RateLimit; c != nil {
		if c.Average <= 0 {
			report(diagnostics.BadRateLimit, "rateLimit.average", "no rate limit", fmt.Errorf("rateLimit has no valid average: the route has no rate limit"))
		} else {
			ps = append(ps, ratelimit.New(c, PolicyState(rs, ratelimit.Name, newBuckets), env))
		}
	}
	if c := a.InFlight; c != nil {
		if c.Amount <= 0 {
			report(diagnostics.BadInFlight, "inFlight.amount", "no in-flight limit", fmt.Errorf("inFlight has no valid amount: the route has no in-flight limit"))
		} else {
			ps = append(ps, inflight.New(c, PolicyState(rs, inflight.Name, newCounters), env))
		}
	}
	if c := a.BasicAuth; c != nil {
		p, notes, err := basicauth.New(c, PolicyState(rs, basicauth.Name, basicauth.NewCache), slots, env)
		if err != nil && (c.UsersFile != "" || len(c.Users) == 0) {
			// Bad users lines were reported by the validator; a file's
			// contents and a missing list only show here.
			report(diagnostics.BadBasicAuth, "basicAuth.usersFile", "route denies every request", err)
		}
		for _, m := range notes.Weak {
			warn(diagnostics.WeakBasicHash, "basicAuth.usersFile", config.WeakHashFallback, m, config.WeakHashHint)
		}
		if notes.Mixed != "" {
			warn(diagnostics.MixedHashCosts, "basicAuth.usersFile", config.MixedCostsFallback, notes.Mixed, config.MixedCostsHint)
		}
		ps = append(ps, p)
	}
	if c := a.ForwardAuth; c != nil {
		p, err := forwardauth.New(c, authRT, env)
		if err != nil && c.Address == "" {
			report(diagnostics.BadForwardAuth, "forwardAuth.address", "route denies every request", err)
		}
		ps = append(ps, p)
	}
	return ps, diags
}

func newBuckets() *ratelimit.Buckets  { return ratelimit.NewBuckets(0) }
func newCounters() *inflight.Counters { return inflight.NewCounters(0) }

// newAuthTransport is the forward-auth services' connection pool, apart
// from the backends' so that an auth service is never a backend.
func newAuthTransport(opts Options) *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       opts.IdleConnTimeout,
		ResponseHeaderTimeout: 0, // each policy's own timeout bounds the whole exchange
		ForceAttemptHTTP2:     true,
	}
}

// refusalRecorder counts policy refusals in
// levee_policy_refusals_total{route,policy,reason}.
type refusalRecorder struct{ m *metrics }

func (f refusalRecorder) Refused(route, name, reason string) {
	f.m.refusals.WithLabelValues(route, name, reason).Inc()
}
