package certs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// ACMESource is the provider name of the ACME manager's diagnostics.
const ACMESource = "acme"

// ACMEOptions configure the ACME manager.
type ACMEOptions struct {
	// Email is the ACME account's contact (--acme-email).
	Email string
	// CA is the ACME directory URL (--acme-ca); "" is Let's Encrypt.
	CA string
	// CARoot is a PEM file of the roots that sign the directory's own
	// HTTPS certificate (--acme-ca-root), for a private CA.
	CARoot string
	// StorageDir holds accounts, certificates and the locks that keep two
	// Levee processes sharing it from ordering the same certificate
	// (--cert-dir, certmagic's file storage).
	StorageDir string
	// ListenHost, HTTPPort and TLSPort are Levee's plain and TLS
	// listeners: certmagic's own challenge servers find these taken and
	// leave the challenges to Levee's listeners (HTTPHandler and the TLS
	// listeners' GetCertificate).
	ListenHost        string
	HTTPPort, TLSPort int
	// RenewCheckInterval is how often certificates are checked for renewal
	// (certmagic's default, 10m, if 0).
	RenewCheckInterval time.Duration
	// Challenges are the challenges tried, in order (ParseChallenges);
	// nil: DNS-01 when DNS is set, else HTTP-01 and TLS-ALPN-01 on the
	// listeners there are (planChallenges).
	Challenges []string
	// DNS is the DNS-01 provider (--acme-dns-provider); nil: no DNS-01.
	DNS *DNSOptions
	Now func() time.Time
	// Sink receives W044 and W045 (nil: logged only).
	Sink       Sink
	Logger     zerolog.Logger
	Registerer prometheus.Registerer
}

// ACME obtains and renews certificates for exactly the hosts SetHosts
// names (never on demand), through certmagic. It is the Store's Issuer.
type ACME struct {
	opts    ACMEOptions
	store   *Store
	cache   *certmagic.Cache
	cfg     *certmagic.Config // exact host names
	wildCfg *certmagic.Config // wildcards, through DNS-01; nil without it
	http    *certmagic.ACMEIssuer
	managed atomic.Pointer[map[string]bool]
	fails   *prometheus.CounterVec

	mu      sync.Mutex
	cancels map[string]context.CancelFunc // per managed host
	state   map[string]*hostState
	wild    []diagnostics.Diagnostic // W045 of the current hosts
}

// hostState is what the manager knows of one host's latest attempt.
type hostState struct {
	lastErr   string
	challenge string
	failures  int
	nextTry   time.Time
}

// NewACME builds the manager on store (for static certificates, which
// take precedence, and expiry metrics) and sets it as store's issuer.
func NewACME(opts ACMEOptions, store *Store) (*ACME, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.StorageDir == "" {
		return nil, errors.New("ACME needs --cert-dir to keep accounts and certificates")
	}
	var roots *x509.CertPool
	if opts.CARoot != "" {
		pemBytes, err := os.ReadFile(opts.CARoot)
		if err != nil {
			return nil, fmt.Errorf("--acme-ca-root: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pemBytes) {
			return nil, fmt.Errorf("--acme-ca-root %s: no PEM certificate in it", opts.CARoot)
		}
	}
	a := &ACME{opts: opts, store: store, cancels: map[string]context.CancelFunc{}, state: map[string]*hostState{}}
	a.fails = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_tls_acme_failures_total", Help: "Failed ACME orders and renewals, by host (each is W044).",
	}, []string{"host"})
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(a.fails); err != nil {
			return nil, err
		}
	}
	empty := map[string]bool{}
	a.managed.Store(&empty)
	zl := zapLogger(opts.Logger)
	a.cache = certmagic.NewCache(certmagic.CacheOptions{
		GetConfigForCert:   func(c certmagic.Certificate) (*certmagic.Config, error) { return a.configFor(c.Names...), nil },
		RenewCheckInterval: opts.RenewCheckInterval,
		Logger:             zl,
	})
	newConfig := func() *certmagic.Config {
		return certmagic.New(a.cache, certmagic.Config{
			Storage:   &certmagic.FileStorage{Path: opts.StorageDir},
			KeySource: certmagic.StandardKeyGenerator{KeyType: certmagic.P256},
			OnEvent:   a.onEvent,
			Logger:    zl,
		})
	}
	a.cfg = newConfig()
	base := certmagic.ACMEIssuer{
		CA:             opts.CA,
		TestCA:         opts.CA, // a private or staging CA: no fallback elsewhere
		Email:          opts.Email,
		Agreed:         true,
		ListenHost:     opts.ListenHost,
		AltHTTPPort:    opts.HTTPPort,
		AltTLSALPNPort: opts.TLSPort,
		TrustedRoots:   roots,
		Logger:         zl,
	}
	if opts.CA == "" {
		base.CA, base.TestCA = certmagic.LetsEncryptProductionCA, certmagic.LetsEncryptStagingCA
	}
	plan, err := planChallenges(a.cfg, opts, base)
	if err != nil {
		a.cache.Stop()
		return nil, fmt.Errorf("--acme-challenges: %w", err)
	}
	a.cfg.Issuers, a.http = plan.names, plan.http
	if plan.wild != nil {
		a.wildCfg = newConfig()
		a.wildCfg.Issuers = plan.wild
	}
	store.SetIssuer(a)
	return a, nil
}

// Manages reports whether name is one of the hosts SetHosts gave, or is
// covered by a wildcard among them (one label, RFC 6125 6.4.3).
func (a *ACME) Manages(name string) bool {
	m := *a.managed.Load()
	if m[name] {
		return true
	}
	_, rest, ok := strings.Cut(name, ".")
	return ok && !strings.HasPrefix(name, "*") && m["*."+rest]
}

// configFor is the configuration that orders and renews a certificate
// for names: the wildcard one when one of them is a wildcard.
func (a *ACME) configFor(names ...string) *certmagic.Config {
	for _, n := range names {
		if strings.HasPrefix(n, "*.") && a.wildCfg != nil {
			return a.wildCfg
		}
	}
	return a.cfg
}

// GetCertificate answers a handshake for a managed host or a TLS-ALPN-01
// challenge.
func (a *ACME) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	return a.cfg.GetCertificate(hello)
}

// HTTPHandler answers HTTP-01 challenges (/.well-known/acme-challenge/)
// in front of next, on the plain listeners.
func (a *ACME) HTTPHandler(next http.Handler) http.Handler {
	if a.http == nil {
		return next
	}
	return a.http.HTTPChallengeHandler(next)
}

// Stop stops renewals and every order under way.
func (a *ACME) Stop() {
	a.mu.Lock()
	for _, cancel := range a.cancels {
		cancel()
	}
	a.mu.Unlock()
	a.cache.Stop()
}

// SetHosts makes the managed set the hosts of TLS routes that need ACME:
// not covered by a static certificate, a valid DNS name, and for a
// wildcard DNS-01 enabled (else W045: no other challenge proves a whole
// domain, RFC 8555 7.1.3). New hosts are ordered in the background;
// hosts no route names any more stop being renewed.
func (a *ACME) SetHosts(ctx context.Context, hosts []string) {
	want := map[string]bool{}
	var wild []diagnostics.Diagnostic
	for _, h := range hosts {
		h = normalizeName(h)
		switch {
		case a.store.HasStatic(h):
		case strings.HasPrefix(h, "*") && a.wildCfg == nil:
			wild = append(wild, diagnostics.New(diagnostics.WildcardNeedsDNS, diagnostics.Source{Provider: ACMESource, ObjectName: h},
				"host", h, "default certificate",
				fmt.Sprintf("%s is a wildcard: ACME can only issue it through DNS-01, which is not enabled", h),
				"give --acme-dns-provider (with dns-01 in --acme-challenges, if set), or put a certificate for "+h+" and its key in --tls-cert-dir, or list the sub-domains as hosts"))
		case validName(h):
			want[h] = true
		}
	}
	type start struct {
		host string
		ctx  context.Context
	}
	var starts []start
	a.mu.Lock()
	changed, removed := false, false
	for h, cancel := range a.cancels {
		if !want[h] {
			removed = true
			cancel()
			delete(a.cancels, h)
			_, failed := a.state[h]
			changed = changed || failed
			delete(a.state, h)
			a.cache.RemoveManaged([]certmagic.SubjectIssuer{{Subject: h}})
			a.opts.Logger.Info().Str("host", h).Msg("ACME: host no longer served over TLS; its certificate is not renewed")
		}
	}
	for h := range want {
		if a.cancels[h] == nil {
			hctx, cancel := context.WithCancel(ctx)
			a.cancels[h] = cancel
			starts = append(starts, start{h, hctx})
		}
	}
	a.managed.Store(&want)
	if changed || !slices.EqualFunc(wild, a.wild, func(x, y diagnostics.Diagnostic) bool { return x.Value == y.Value }) {
		a.wild = wild
		a.publishLocked()
	}
	a.mu.Unlock()
	if removed {
		a.store.RefreshExpiry() // drop the series of hosts no longer served
	}
	// Outside the lock: certmagic loads a stored certificate at once and
	// reports it through onEvent, which takes the lock.
	slices.SortFunc(starts, func(x, y start) int { return strings.Compare(x.host, y.host) })
	for _, st := range starts {
		if err := a.configFor(st.host).ManageAsync(st.ctx, []string{st.host}); err != nil {
			a.opts.Logger.Warn().Err(err).Str("host", st.host).Msg("ACME: cannot manage host")
		}
	}
}

// publishLocked sends the current W044 and W045 to the sink.
func (a *ACME) publishLocked() {
	var ds []diagnostics.Diagnostic
	ds = append(ds, a.wild...)
	for h, st := range a.state {
		if st.lastErr == "" {
			continue
		}
		ds = append(ds, diagnostics.New(diagnostics.ACMEFailed, diagnostics.Source{Provider: ACMESource, ObjectName: h},
			"host", h, "current certificate",
			fmt.Sprintf("certificate for %s not obtained (challenge %s, attempt %d): %s; next try about %s",
				h, st.challenge, st.failures, st.lastErr, st.nextTry.UTC().Format(time.RFC3339)),
			failureHint(h, st.challenge)))
	}
	diagnostics.Sort(ds)
	if a.opts.Sink != nil {
		a.opts.Sink.Update(config.SourceUpdate{Source: ACMESource, Diagnostics: ds})
	}
}

// Certificates is the status of every managed host.
func (a *ACME) Certificates() []status.CertificateStatus {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []status.CertificateStatus
	for h := range a.cancels {
		st := status.CertificateStatus{Host: h, Source: SourceACME}
		if s := a.state[h]; s != nil && s.lastErr != "" {
			st.LastError, st.NextRenewal = s.lastErr, s.nextTry
		}
		for _, c := range a.cache.AllMatchingCertificates(h) {
			if c.Leaf == nil || (!st.NotAfter.IsZero() && c.Leaf.NotAfter.Before(st.NotAfter)) {
				continue
			}
			info := infoOf(&c.Certificate, SourceACME)
			st.Issuer, st.NotAfter = info.Issuer, info.NotAfter
			if st.LastError == "" {
				st.NextRenewal = renewalTime(c.Leaf)
			}
		}
		out = append(out, st)
	}
	return out
}

// renewalTime is when certmagic renews a certificate: once a third of its
// lifetime is left (certmagic's default RenewalWindowRatio).
func renewalTime(leaf *x509.Certificate) time.Time {
	life := leaf.NotAfter.Sub(leaf.NotBefore)
	return leaf.NotAfter.Add(-life / 3).UTC()
}
