package certs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
	"go.uber.org/zap"
)

// The ACME challenges (RFC 8555 8.3, 8.4; RFC 8737), by their names in
// --acme-challenges.
const (
	ChallengeHTTP01    = acme.ChallengeTypeHTTP01
	ChallengeTLSALPN01 = acme.ChallengeTypeTLSALPN01
	ChallengeDNS01     = acme.ChallengeTypeDNS01
)

// DNSOptions configure the DNS-01 challenge.
type DNSOptions struct {
	// Name is the provider's name (--acme-dns-provider), for messages.
	Name string
	// Provider publishes and removes the challenge's TXT record.
	Provider certmagic.DNSProvider
	// Resolvers (host[:port]) are asked for the zone of a name and whether
	// the record is visible yet; none: the system's resolvers for the
	// zone, then the zone's authoritative servers for the record.
	Resolvers []string
	// PropagationTimeout is how long to wait for the record to be visible
	// before telling the CA to look; negative: do not check, tell the CA
	// at once; 0: certmagic's default, two minutes.
	PropagationTimeout time.Duration
}

// ParseChallenges reads a comma-separated list of challenges, in the
// order they are to be tried. Each name may appear once.
func ParseChallenges(s string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(s, ",") {
		c = strings.ToLower(strings.TrimSpace(c))
		switch {
		case c == "":
			continue
		case c != ChallengeHTTP01 && c != ChallengeTLSALPN01 && c != ChallengeDNS01:
			return nil, fmt.Errorf("%q: want %s, %s or %s", c, ChallengeTLSALPN01, ChallengeHTTP01, ChallengeDNS01)
		case slices.Contains(out, c):
			return nil, fmt.Errorf("%s is named twice", c)
		}
		out = append(out, c)
	}
	if len(out) == 0 && strings.TrimSpace(s) != "" {
		return nil, errors.New("no challenge named")
	}
	return out, nil
}

// challengePlan is the issuers of the two certmagic configurations:
// names for exact host names, wild for wildcards (DNS-01 only; nil when
// DNS-01 is off, and wildcards then get W045).
type challengePlan struct {
	names, wild []certmagic.Issuer
	// http answers HTTP-01 on the plain listeners.
	http *certmagic.ACMEIssuer
}

// planChallenges makes one ACME issuer per challenge of opts.Challenges, in
// their order: certmagic tries a configuration's issuers in turn until
// one obtains the certificate, so the order of the list is the order of
// the challenges (the CA's order fails with its first invalid challenge,
// so each try is an order of its own). Without a list: DNS-01 alone when
// a DNS provider is given, else one issuer with HTTP-01 and TLS-ALPN-01,
// between which the ACME client chooses.
func planChallenges(cfg *certmagic.Config, opts ACMEOptions, base certmagic.ACMEIssuer) (challengePlan, error) {
	challenges := opts.Challenges
	if challenges == nil && opts.DNS != nil {
		challenges = []string{ChallengeDNS01}
	}
	var plan challengePlan
	if challenges == nil {
		iss := certmagic.NewACMEIssuer(cfg, base)
		iss.DisableHTTPChallenge = opts.HTTPPort == 0
		iss.DisableTLSALPNChallenge = opts.TLSPort == 0
		plan.names, plan.http = []certmagic.Issuer{iss}, iss
		return plan, nil
	}
	for _, c := range challenges {
		tmpl := base
		tmpl.DisableHTTPChallenge = c != ChallengeHTTP01
		tmpl.DisableTLSALPNChallenge = c != ChallengeTLSALPN01
		switch c {
		case ChallengeHTTP01:
			if opts.HTTPPort == 0 {
				return plan, errors.New("the http-01 challenge needs a plain listener (--http-listen or --listen name=addr)")
			}
		case ChallengeTLSALPN01:
			if opts.TLSPort == 0 {
				return plan, errors.New("the tls-alpn-01 challenge needs a TLS listener (--listen name=addr,tls)")
			}
		case ChallengeDNS01:
			if opts.DNS == nil || opts.DNS.Provider == nil {
				return plan, errors.New("the dns-01 challenge needs a DNS provider (--acme-dns-provider)")
			}
			tmpl.DNS01Solver = newDNSSolver(*opts.DNS, base.Logger)
		}
		iss := certmagic.NewACMEIssuer(cfg, tmpl)
		plan.names = append(plan.names, iss)
		switch c {
		case ChallengeHTTP01:
			plan.http = iss
		case ChallengeDNS01:
			plan.wild = []certmagic.Issuer{iss}
		}
	}
	return plan, nil
}

// dnsSolver is certmagic's DNS-01 solver whose failures to publish the
// record say so (dnsError), since the CA never saw a challenge then.
type dnsSolver struct {
	*certmagic.DNS01Solver
	provider string
}

func newDNSSolver(o DNSOptions, log *zap.Logger) dnsSolver {
	return dnsSolver{provider: o.Name, DNS01Solver: &certmagic.DNS01Solver{DNSManager: certmagic.DNSManager{
		DNSProvider:        o.Provider,
		Resolvers:          o.Resolvers,
		PropagationTimeout: o.PropagationTimeout,
		Logger:             log,
	}}}
}

// Present publishes the challenge's TXT record.
func (s dnsSolver) Present(ctx context.Context, c acme.Challenge) error {
	if err := s.DNS01Solver.Present(ctx, c); err != nil {
		return &dnsError{provider: s.provider, err: err}
	}
	return nil
}

// Wait waits until the record is visible to the resolvers.
func (s dnsSolver) Wait(ctx context.Context, c acme.Challenge) error {
	if err := s.DNS01Solver.Wait(ctx, c); err != nil {
		return &dnsError{provider: s.provider, err: err}
	}
	return nil
}

// dnsError is a DNS-01 record that could not be published or seen.
type dnsError struct {
	provider string
	err      error
}

func (e *dnsError) Error() string {
	return fmt.Sprintf("dns-01 through %s: %v", e.provider, e.err)
}

func (e *dnsError) Unwrap() error { return e.err }
