package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http/httptrace"
	"strings"
	"time"
)

// DefaultHandshakeTimeout bounds a TLS handshake with a backend when no
// dial timeout is set: as net/http's Transport.TLSHandshakeTimeout.
const DefaultHandshakeTimeout = 10 * time.Second

// TLSError is a failed TLS handshake with a backend: the backend's
// fault (its certificate, its TLS settings, its silence), and the request
// was never sent.
type TLSError struct {
	// Addr is the backend's host:port; ServerName the name verified.
	Addr, ServerName string
	// Reason names the failure in a few words (ReasonUnknownAuthority…).
	Reason string
	Err    error
}

// Reasons of a TLSError.
const (
	ReasonUnknownAuthority = "unknown authority"
	ReasonNameMismatch     = "name mismatch"
	ReasonExpired          = "certificate expired or not yet valid"
	ReasonBadCertificate   = "invalid certificate"
	ReasonTimeout          = "handshake timeout"
	ReasonClientCert       = "client certificate refused"
	ReasonHandshake        = "handshake failed"
)

func (e *TLSError) Error() string {
	return fmt.Sprintf("TLS handshake with backend %s (server name %q): %s: %v", e.Addr, e.ServerName, e.Reason, e.Err)
}

func (e *TLSError) Unwrap() error { return e.Err }

// tlsReason names why a handshake failed.
func tlsReason(err error) string {
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var alert tls.AlertError
	var ne net.Error
	switch {
	case errors.As(err, &unknown):
		return ReasonUnknownAuthority
	case errors.As(err, &host):
		return ReasonNameMismatch
	case errors.As(err, &invalid):
		if invalid.Reason == x509.Expired {
			return ReasonExpired
		}
		return ReasonBadCertificate
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.As(err, &alert) && clientCertAlert(alert.Error()),
		isRemoteAlert(err) && clientCertAlert(err.Error()):
		return ReasonClientCert
	case strings.Contains(err.Error(), "no application protocol"):
		// no_application_protocol (RFC 7301 3.2): the backend speaks
		// none of the protocols offered, h2 alone for scheme=h2.
		return ReasonNoH2
	}
	return ReasonHandshake
}

// isRemoteAlert reports whether err is an alert the backend sent, which
// crypto/tls reports as a *net.OpError "remote error".
func isRemoteAlert(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "remote error"
}

// clientCertAlert reports whether an alert's text is one a server sends
// about the client's certificate: bad_certificate, certificate_required
// (RFC 8446 6.2), unknown_ca, access_denied.
func clientCertAlert(text string) bool {
	for _, s := range []string{"bad certificate", "certificate required", "unknown certificate authority", "access denied"} {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// handshake runs a TLS client handshake over conn with cfg, the server
// name defaulting to addr's host, bounded by timeout (0:
// DefaultHandshakeTimeout). On failure conn is closed and the error is a
// *TLSError.
func handshake(ctx context.Context, conn net.Conn, cfg *tls.Config, addr string, timeout time.Duration) (*tls.Conn, error) {
	if cfg.ServerName == "" {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		cfg = cfg.Clone() // shares the session cache
		cfg.ServerName = host
	}
	if timeout <= 0 {
		timeout = DefaultHandshakeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tc := tls.Client(conn, cfg)
	// The handshake is Levee's, not the Transport's: the request's
	// httptrace hooks are called here.
	trace := httptrace.ContextClientTrace(ctx)
	if trace != nil && trace.TLSHandshakeStart != nil {
		trace.TLSHandshakeStart()
	}
	err := tc.HandshakeContext(ctx)
	if trace != nil && trace.TLSHandshakeDone != nil {
		trace.TLSHandshakeDone(tc.ConnectionState(), err)
	}
	if err != nil {
		_ = conn.Close()
		reason := tlsReason(err)
		if ctx.Err() == context.DeadlineExceeded {
			reason, err = ReasonTimeout, fmt.Errorf("no handshake within %s: %w", timeout, err)
		}
		return nil, &TLSError{Addr: addr, ServerName: cfg.ServerName, Reason: reason, Err: err}
	}
	return tc, nil
}

// alertAsTLSError makes a TLS alert that came after the handshake a
// *TLSError: in TLS 1.3 a backend refuses Levee's client certificate (or
// its absence) after the client has finished, so the refusal is read
// where the answer was expected (RFC 8446 4.4.2.4). The backend had
// dropped the connection before reading the request.
func alertAsTLSError(cfg *tls.Config, addr string, err error) error {
	var alert tls.AlertError
	var te *TLSError
	if cfg == nil || err == nil || errors.As(err, &te) || !errors.As(err, &alert) && !isRemoteAlert(err) {
		return err
	}
	return &TLSError{Addr: addr, ServerName: serverName(cfg, addr), Reason: tlsReason(err), Err: err}
}

// serverName is the name a handshake with cfg to addr verifies.
func serverName(cfg *tls.Config, addr string) string {
	if cfg.ServerName != "" {
		return cfg.ServerName
	}
	name, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return name
}
