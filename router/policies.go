package router

import (
	"net"
	"net/http"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/basicauth"
	"github.com/levee-proxy/levee/router/policy/compress"
	"github.com/levee-proxy/levee/router/policy/cors"
	"github.com/levee-proxy/levee/router/policy/deny"
	"github.com/levee-proxy/levee/router/policy/errorpages"
	"github.com/levee-proxy/levee/router/policy/forwardauth"
	"github.com/levee-proxy/levee/router/policy/headers"
	"github.com/levee-proxy/levee/router/policy/inflight"
	"github.com/levee-proxy/levee/router/policy/ipallow"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
	"github.com/levee-proxy/levee/router/policy/redirect"
	"github.com/levee-proxy/levee/router/policy/rewrite"
)

// PolicyDeps are the process-wide collaborators some kinds of policy
// share over every route.
type PolicyDeps struct {
	// AuthTransport asks forward-auth services (a pool apart from the
	// backends', so that an auth service is never a backend).
	AuthTransport http.RoundTripper
	// PasswordSlots bound the basic-auth password checks under way.
	PasswordSlots *basicauth.Slots
	// Encoders are the compression encoders under one memory budget.
	Encoders *compress.Encoders
	// RateFleet reconciles the rate limits with scope=fleet through the
	// breaker store (nil: there is none, they are local).
	RateFleet *ratelimit.Fleet
	// InFlightFleet reconciles the in-flight limits with scope=fleet
	// through the breaker store (nil: there is none, they are local).
	InFlightFleet *inflight.Fleet
	// ErrorPagesDir is the directory error-page files (errors.file) are
	// read from; none: page files are off.
	ErrorPagesDir string
}

// DefaultPolicies is every kind of policy Levee has, in the order a
// route compiles them: the access policies (which admit or refuse a
// request) and then the transform policies (which change a request or
// its response). The chain sorts the compiled policies by stage,
// stably, so that of one stage the earlier listed runs first (CORS, whose
// preflight is an answer, before headers). Sticky sessions are not a
// chain policy: the balancer's pick reads them from the route's config
// (router/proxy).
func DefaultPolicies(d PolicyDeps) []policy.Kind {
	return []policy.Kind{
		deny.Kind,
		ipallow.Kind,
		ratelimit.Kind(d.RateFleet),
		inflight.Kind(d.InFlightFleet),
		basicauth.Kind(d.PasswordSlots),
		forwardauth.Kind(d.AuthTransport),
		redirect.SchemeKind,
		redirect.RegexKind,
		cors.Kind,
		headers.Kind,
		rewrite.Kind,
		errorpages.Kind(d.ErrorPagesDir),
		compress.Kind(d.Encoders),
	}
}

// compilePolicies builds the route's policy chain from the router's
// kinds. Access policies keep their state in the route's registry entry,
// so that buckets, counters and the credentials cache survive a rebuild;
// the state of policies the route no longer has is dropped. Callers hold
// r.mu.
func (r *Router) compilePolicies(rt *Route) []diagnostics.Diagnostic {
	env := policy.Env{Route: rt.ep.ID, Rec: r.refusals, Now: r.clock.Now, TrustedProxies: r.opts.TrustedProxies}
	ps, diags := compileKinds(r.opts.Policies, policy.Input{Entrypoint: &rt.ep, Env: env, Source: sourceOf(rt.ep), State: rt.state})
	rt.chain = policy.NewChain(ps)
	names := make([]string, 0, len(ps))
	rt.refs = nil
	for _, p := range ps {
		names = append(names, p.Name())
		if ref, ok := p.(policy.Referrer); ok {
			rt.refs = append(rt.refs, ref.References()...)
		}
	}
	rt.state.retainPolicyState(names)
	return diags
}

// compileKinds compiles in with each of kinds, in order.
func compileKinds(kinds []policy.Kind, in policy.Input) ([]policy.Policy, []diagnostics.Diagnostic) {
	var ps []policy.Policy
	var diags []diagnostics.Diagnostic
	for _, k := range kinds {
		p, d := k.Compile(in)
		diags = append(diags, d...)
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps, diags
}

// transformPolicies compiles only the route's transform policies, which
// hold no state across snapshots.
func transformPolicies(ep *config.Entrypoint, env policy.Env, encoders *compress.Encoders) []policy.Policy {
	var kinds []policy.Kind
	for _, k := range DefaultPolicies(PolicyDeps{Encoders: encoders}) {
		if k.IsTransform() {
			kinds = append(kinds, k)
		}
	}
	ps, _ := compileKinds(kinds, policy.Input{Entrypoint: ep, Env: env, Source: sourceOf(*ep)})
	return ps
}

// Retain implements policy.State with the route's registry entry.
func (rs *RouteState) Retain(name string, keep func(any) bool, create func() any) any {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if s, ok := rs.policies[name]; ok && keep(s) {
		return s
	}
	s := create()
	if rs.policies == nil {
		rs.policies = make(map[string]any)
	}
	rs.policies[name] = s
	return s
}

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

// ErrorPageDiagnostics reads the error-page files (errors.file) of the
// entrypoints inside pagesDir as the router would, and returns what it
// would report (W088, W089), for `levee validate`.
func ErrorPageDiagnostics(eps []config.Entrypoint, pagesDir string) []diagnostics.Diagnostic {
	kind := errorpages.Kind(pagesDir)
	var out []diagnostics.Diagnostic
	for i := range eps {
		if e := eps[i].Transform.Errors; e == nil || e.File == "" {
			continue
		}
		_, ds := kind.Compile(policy.Input{Entrypoint: &eps[i], Source: sourceOf(eps[i])})
		out = append(out, ds...)
	}
	return out
}
