package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/certs"
	"github.com/levee-proxy/levee/router/certs/dnsprovider"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// acmeEnabled: ACME is opt-in (--acme-email or --acme-ca), so that a
// test or a laptop never orders from Let's Encrypt by accident.
func (c serveConfig) acmeEnabled() bool { return c.ACMEEmail != "" || c.ACMECA != "" }

// hostsResync is how often the managed hosts are recomputed besides on
// route events (events may be dropped by a full subscriber channel).
const hostsResync = 30 * time.Second

// enableACME starts ACME once the listeners are bound (bound has their
// real addresses): HTTP-01 on the first plain listener's port, TLS-ALPN-01
// on the first TLS listener's, for the hosts of TLS routes, kept in step
// with the router's snapshots.
func (a *app) enableACME(cfg serveConfig, bound []listenerSpec, log zerolog.Logger, reg prometheus.Registerer) error {
	if !cfg.acmeEnabled() || a.certs == nil {
		if cfg.acmeEnabled() {
			log.Warn().Msg("--acme-email and --acme-ca have no effect without a TLS listener (--listen name=addr,tls)")
		}
		if cfg.ACMEDNSProvider != "" && !cfg.acmeEnabled() {
			log.Warn().Msg("--acme-dns-provider has no effect without --acme-email or --acme-ca")
		}
		return nil
	}
	challenges, _ := certs.ParseChallenges(cfg.ACMEChallenges) // checked with the flags
	opts := certs.ACMEOptions{
		Email: cfg.ACMEEmail, CA: cfg.ACMECA, CARoot: cfg.ACMECARoot, StorageDir: cfg.CertDir,
		RenewCheckInterval: cfg.ACMERenewInterval, Challenges: challenges,
		Sink: a.router, Logger: log.With().Str("component", "acme").Logger(), Registerer: reg,
	}
	if cfg.ACMEDNSProvider != "" {
		dns, err := cfg.dnsOptions(context.Background())
		if err != nil {
			return err
		}
		opts.DNS = dns
	}
	for _, s := range bound {
		if s.TCP {
			continue // serves no HTTP: no challenge is answered there
		}
		host, port, _ := net.SplitHostPort(s.Addr)
		p, _ := strconv.Atoi(port)
		switch {
		case s.TLS && opts.TLSPort == 0:
			opts.TLSPort = p
		case !s.TLS && opts.HTTPPort == 0:
			opts.HTTPPort, opts.ListenHost = p, host
		}
	}
	m, err := certs.NewACME(opts, a.certs)
	if err != nil {
		return err
	}
	a.acme = m
	a.tlsConfig = a.certs.Config(opts.TLSPort != 0)
	a.background = append(a.background, func(ctx context.Context) {
		<-ctx.Done()
		m.Stop()
	})
	return nil
}

// checkDNS01 checks the DNS-01 and challenge flags: a known provider,
// valid resolvers, a list of known challenges with dns-01 only beside a
// provider. The provider's credentials are read later, by dnsOptions.
func (c serveConfig) checkDNS01() []error {
	var errs []error
	if c.ACMEDNSProvider != "" && !dnsprovider.Known(c.ACMEDNSProvider) {
		errs = append(errs, fmt.Errorf("--acme-dns-provider (LEVEE_ACME_DNS_PROVIDER) %q: want one of %s", c.ACMEDNSProvider, strings.Join(dnsprovider.Names(), ", ")))
	}
	challenges, err := certs.ParseChallenges(c.ACMEChallenges)
	if err != nil {
		errs = append(errs, fmt.Errorf("--acme-challenges (LEVEE_ACME_CHALLENGES): %w", err))
	}
	if slices.Contains(challenges, certs.ChallengeDNS01) && c.ACMEDNSProvider == "" {
		errs = append(errs, errors.New("--acme-challenges (LEVEE_ACME_CHALLENGES) names dns-01: it needs --acme-dns-provider (LEVEE_ACME_DNS_PROVIDER)"))
	}
	if _, err := c.dnsResolvers(); err != nil {
		errs = append(errs, err)
	}
	if c.ACMEDNSPropagationTimeout < 0 {
		errs = append(errs, fmt.Errorf("--acme-dns-propagation-timeout (LEVEE_ACME_DNS_PROPAGATION_TIMEOUT) %s: must not be negative", c.ACMEDNSPropagationTimeout))
	}
	return errs
}

// dnsResolvers parses --acme-dns-resolvers: host[:port], comma-separated
// (port 53 by default).
func (c serveConfig) dnsResolvers() ([]string, error) {
	var out []string
	for _, item := range strings.Split(c.ACMEDNSResolvers, ",") {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		host, port, err := net.SplitHostPort(item)
		if err != nil {
			host, port = strings.Trim(item, "[]"), "53"
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, "/ []") {
			return nil, fmt.Errorf("--acme-dns-resolvers (LEVEE_ACME_DNS_RESOLVERS): %q is not host[:port]", item)
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	return out, nil
}

// dnsOptions builds the DNS-01 provider from its credentials in the
// environment (an error names the variable) and the resolver flags.
func (c serveConfig) dnsOptions(ctx context.Context) (*certs.DNSOptions, error) {
	getenv := c.getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	p, err := dnsprovider.New(ctx, c.ACMEDNSProvider, dnsprovider.Env{Getenv: getenv, ReadFile: os.ReadFile})
	if err != nil {
		return nil, fmt.Errorf("--acme-dns-provider: %w", err)
	}
	resolvers, _ := c.dnsResolvers() // checked with the flags
	timeout := c.ACMEDNSPropagationTimeout
	if timeout == 0 {
		timeout = -1 // certmagic's "no check"
	}
	return &certs.DNSOptions{Name: c.ACMEDNSProvider, Provider: p, Resolvers: resolvers, PropagationTimeout: timeout}, nil
}

// plainHandler is the plain listeners' handler: the request path, behind
// the HTTP-01 challenge responder when ACME is on.
func (a *app) plainHandler() http.Handler {
	if a.acme == nil {
		return a.proxy
	}
	return a.acme.HTTPHandler(a.proxy)
}

// watchRoutes follows the route table now, on every route change and
// every hostsResync, until ctx ends: it checks the routes against the
// listeners (W046, W047, as the source "listeners") and gives m, when ACME
// is on, the hosts of TLS routes.
func watchRoutes(ctx context.Context, rt *router.Router, listeners []*router.Listener, m *certs.ACME) {
	events, unsubscribe := rt.Subscribe(64)
	defer unsubscribe()
	t := time.NewTicker(hostsResync)
	defer t.Stop()
	var last []diagnostics.Diagnostic
	for {
		snap := rt.Snapshot()
		if ds := snap.ListenerDiagnostics(listeners); !slices.EqualFunc(ds, last, sameDiagnostic) {
			rt.Update(config.SourceUpdate{Source: listenerSource, Diagnostics: ds})
			last = ds
		}
		if m != nil {
			m.SetHosts(ctx, tlsHosts(snap))
		}
		if !nextRouteChange(ctx, events, t.C) {
			return
		}
	}
}

// listenerSource is the provider name of the listener diagnostics.
const listenerSource = "listeners"

func sameDiagnostic(a, b diagnostics.Diagnostic) bool {
	return a.Code == b.Code && a.Source == b.Source && a.Key == b.Key && a.Value == b.Value
}

// nextRouteChange waits for a route event or a tick; false when ctx ends
// or the subscription does. Other events (diagnostics, breakers, among
// them those SetHosts itself causes) are skipped.
func nextRouteChange(ctx context.Context, events <-chan status.Event, tick <-chan time.Time) bool {
	for {
		select {
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		case ev, ok := <-events:
			if !ok {
				return false
			}
			if ev.Type == status.EventRoute {
				return true
			}
		}
	}
}

// tlsHosts are the hosts of the routes served over TLS.
func tlsHosts(s *router.Snapshot) []string {
	var out []string
	for _, r := range s.Routes() {
		if ep := r.Entrypoint(); ep.TLS.Enabled {
			out = append(out, ep.Hosts...)
		}
	}
	return out
}
