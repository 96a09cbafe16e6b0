// Package ipallow is the IP allow-list policy: a request whose client
// address is in none of the route's source ranges is refused with 403
// and X-Levee-Diagnostic: forbidden-ip.
//
// The client address is the one the proxy forwards in X-Forwarded-For
// (policy.ClientIP): the peer's, unless the peer is one of levee serve's
// --trusted-proxies, whose X-Forwarded-For is then believed. A client
// that is not behind a trusted proxy cannot choose its address by
// sending the header.
//
// The policy fails closed: a source range that does not parse, an
// address that cannot be determined, or an empty list deny the request;
// a bad configuration never allows everyone.
package ipallow

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Name is the policy's name in metrics and logs.
const Name = "ip-allow-list"

// Policy is one route's compiled allow-list.
type Policy struct {
	ranges  []netip.Prefix
	depth   int
	trusted []netip.Prefix
	deny    bool // misconfigured: every request is refused
	ref     policy.Refuser
}

// New compiles cfg. A bad range gives an error and a Policy that denies
// every request.
func New(cfg *config.IPAllowList, env policy.Env) (*Policy, error) {
	p := &Policy{depth: cfg.Depth, trusted: env.TrustedProxies, ref: env.Refuser(Name)}
	var errs []error
	for _, s := range cfg.SourceRange {
		pfx, err := config.ParseSourceRange(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.ranges = append(p.ranges, pfx)
	}
	if len(cfg.SourceRange) == 0 {
		errs = append(errs, errors.New("no source range: every request is refused"))
	}
	if err := errors.Join(errs...); err != nil {
		p.deny = true
		return p, fmt.Errorf("ipAllowList: %w", err)
	}
	return p, nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageIPAllowList }

// Serve implements policy.Policy.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if p.deny {
		p.ref.Refuse(w, http.StatusForbidden, policy.ReasonPolicyMisconfigured, "access policy misconfigured\n")
		return
	}
	if a, ok := policy.ClientIP(r, p.trusted, p.depth); ok && p.allows(a) {
		next.ServeHTTP(w, r)
		return
	}
	p.ref.Refuse(w, http.StatusForbidden, policy.ReasonForbiddenIP, "client address not allowed\n")
}

func (p *Policy) allows(a netip.Addr) bool {
	for _, pfx := range p.ranges {
		if pfx.Contains(a) {
			return true
		}
	}
	return false
}
