package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/certs/certfile"
	"github.com/levee-proxy/levee/router/config"
)

// Source names where a certificate came from.
const (
	SourceStatic  = "static"
	SourceACME    = "acme"
	SourceDefault = "default"
)

// DiagnosticSource is the provider name of the store's diagnostics.
const DiagnosticSource = "tls"

// DefaultPollInterval is how often --tls-cert-dir is checked for changes.
const DefaultPollInterval = 5 * time.Second

// Issuer obtains certificates for the names it manages (ACME).
type Issuer interface {
	// Manages reports whether the issuer has (or is getting) a
	// certificate for name.
	Manages(name string) bool
	// GetCertificate answers a handshake for a managed name, or a
	// TLS-ALPN-01 challenge.
	GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error)
}

// Sink receives the store's diagnostics (a config.SourceUpdate without
// entrypoints): *router.Router.
type Sink interface {
	Update(config.SourceUpdate)
}

// FilePair names one static certificate's files (--tls-cert): a PEM
// chain and its key, or one PEM file holding both (Key "").
type FilePair = certfile.Pair

// Options configure a Store.
type Options struct {
	// Dir holds static certificates; "" for none.
	Dir string
	// Files are static certificates given one by one, beside Dir's; they
	// are chosen by SNI the same way and polled with it.
	Files []FilePair
	// DefaultCert and DefaultKey are PEM files of the default certificate;
	// both "" to generate a self-signed one.
	DefaultCert, DefaultKey string
	// PollInterval is how often Dir and Files are checked
	// (DefaultPollInterval if 0).
	PollInterval time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time
	// Sink receives W043 for unusable files (nil: logged only).
	Sink       Sink
	Logger     zerolog.Logger
	Registerer prometheus.Registerer
}

// Store chooses certificates; it is safe for concurrent use.
type Store struct {
	opts    Options
	static  atomic.Pointer[staticSet]
	def     *tls.Certificate
	defInfo CertInfo
	issuer  atomic.Pointer[issuerBox]
	metrics *metrics

	mu  sync.Mutex // serialises reloads
	sig string     // signature of Dir at the last load
}

type issuerBox struct{ Issuer }

// New loads the default certificate (or generates one) and the static
// directory. A default certificate that cannot be loaded is an error (the
// operator asked for it); problems in Dir are W043 diagnostics.
func New(opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	s := &Store{opts: opts, metrics: newMetrics()}
	if err := s.metrics.register(opts.Registerer); err != nil {
		return nil, err
	}
	switch {
	case opts.DefaultCert == "" && opts.DefaultKey == "":
		c, err := selfSigned(opts.Now())
		if err != nil {
			return nil, fmt.Errorf("generating the default certificate: %w", err)
		}
		s.def = c
	case opts.DefaultCert == "" || opts.DefaultKey == "":
		return nil, errors.New("--tls-default-cert and --tls-default-key go together: give both or neither")
	default:
		p, err := loadPair(opts.DefaultCert, opts.DefaultKey, "--tls-default-key", opts.Now())
		if err != nil {
			return nil, fmt.Errorf("default certificate: %w", err)
		}
		s.def = p.cert
	}
	s.defInfo = infoOf(s.def, SourceDefault)
	s.static.Store(&staticSet{})
	if s.staticConfigured() {
		if err := s.Reload(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SetIssuer sets the issuer asked for names without a static certificate.
func (s *Store) SetIssuer(i Issuer) { s.issuer.Store(&issuerBox{i}) }

// GetCertificate chooses the certificate for a handshake: static, then
// the issuer, then the default (package doc).
func (s *Store) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := normalizeName(hello.ServerName)
	if b := s.issuer.Load(); b != nil && isACMEChallenge(hello) {
		return b.GetCertificate(hello)
	}
	if name != "" {
		if p := s.static.Load().lookup(name); p != nil {
			return p.cert, nil
		}
		if b := s.issuer.Load(); b != nil && b.Manages(name) {
			c, err := b.GetCertificate(hello)
			if err == nil && c != nil {
				return c, nil
			}
			// No certificate yet (the order is under way or failed):
			// the default one, rather than no handshake at all.
		}
	}
	s.metrics.defaultServed.Inc()
	return s.def, nil
}

// HasStatic reports whether a static certificate covers name, so that
// ACME leaves it alone.
func (s *Store) HasStatic(name string) bool {
	return s.static.Load().lookup(normalizeName(name)) != nil
}

// staticConfigured reports whether static certificates were configured
// (a directory or files), so that there is something to load and poll.
func (s *Store) staticConfigured() bool { return s.opts.Dir != "" || len(s.opts.Files) > 0 }

// Run polls Dir and Files until ctx ends and reloads them when they
// changed.
func (s *Store) Run(ctx context.Context) {
	if !s.staticConfigured() {
		return
	}
	t := time.NewTicker(s.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := s.Reload(); err != nil {
				s.opts.Logger.Warn().Err(err).Str("dir", s.opts.Dir).Msg("static certificates not reloaded")
			}
		}
	}
}

// Reload reads Dir and Files again if they changed since the last load.
// The new set replaces the old one whole; an unreadable directory keeps
// the old set and is an error (a file of Files that cannot be read is
// W043, as a file of Dir is).
func (s *Store) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sig := filesSignature(s.opts.Files)
	if s.opts.Dir != "" {
		dirSig, err := dirSignature(s.opts.Dir)
		if err != nil {
			return fmt.Errorf("reading --tls-cert-dir %s: %w", s.opts.Dir, err)
		}
		sig += dirSig
	}
	if sig == s.sig {
		return nil
	}
	set := &staticSet{exact: map[string]*pair{}, wildcard: map[string]*pair{}}
	var diags []diagnostics.Diagnostic
	if s.opts.Dir != "" {
		set, diags = loadDir(s.opts.Dir, s.opts.Now())
	}
	diags = append(diags, loadFiles(set, s.opts.Files, s.opts.Now())...)
	s.static.Store(set)
	s.sig = sig
	s.metrics.setExpiry(s.Certificates())
	s.opts.Logger.Info().Str("dir", s.opts.Dir).Int("files", len(s.opts.Files)).Int("certificates", len(set.pairs)).Int("problems", len(diags)).Msg("static certificates loaded")
	if s.opts.Sink != nil {
		s.opts.Sink.Update(config.SourceUpdate{Source: DiagnosticSource, Diagnostics: diags})
	} else {
		for _, d := range diags {
			s.opts.Logger.Warn().Str("code", string(d.Code)).Str("file", d.Source.ObjectName).Msg(d.Message)
		}
	}
	return nil
}

// normalizeName lower-cases a server name and drops a trailing dot.
func normalizeName(n string) string {
	return strings.TrimSuffix(strings.ToLower(n), ".")
}

func isACMEChallenge(hello *tls.ClientHelloInfo) bool {
	return len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == ProtoACMETLS
}

// certDiag builds a W043 about a file of --tls-cert-dir.
func certDiag(file, msg, hint string) diagnostics.Diagnostic {
	return fileDiag("--tls-cert-dir", file, msg, hint)
}

// fileDiag builds a W043 about file, given by the flag named.
func fileDiag(flag, file, msg, hint string) diagnostics.Diagnostic {
	return diagnostics.New(diagnostics.BadCertificate, diagnostics.Source{Provider: DiagnosticSource, ObjectName: file},
		flag, file, "not loaded", msg, hint)
}
