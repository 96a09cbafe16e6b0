package certs

import (
	"crypto/tls"
	"io"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router/status"
)

type metrics struct {
	handshakes    *prometheus.CounterVec
	errors        *prometheus.CounterVec
	defaultServed prometheus.Counter
	expiry        *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_tls_handshakes_total", Help: "TLS handshakes completed on the TLS listeners, by protocol version and ALPN protocol.",
		}, []string{"version", "alpn"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_tls_handshake_errors_total", Help: "TLS handshakes that failed on the TLS listeners, by reason (eof, timeout, version, cipher, certificate, alert, other).",
		}, []string{"reason"}),
		defaultServed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "levee_tls_default_certificate_served_total", Help: "Handshakes answered with the default certificate (no SNI, or a name without a certificate).",
		}),
		expiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "levee_tls_certificate_expiry_timestamp_seconds", Help: "When the certificate served for a host expires (Unix time); host \"*\" is the default certificate.",
		}, []string{"host"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{m.handshakes, m.errors, m.defaultServed, m.expiry} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// setExpiry replaces the expiry series with the certificates served now.
func (m *metrics) setExpiry(certs []status.CertificateStatus) {
	m.expiry.Reset()
	for _, c := range certs {
		if !c.NotAfter.IsZero() {
			m.expiry.WithLabelValues(c.Host).Set(float64(c.NotAfter.Unix()))
		}
	}
}

// RefreshExpiry updates the expiry series (after the issuer's set changed).
func (s *Store) RefreshExpiry() { s.metrics.setExpiry(s.Certificates()) }

// countHandshake is the TLS config's VerifyConnection: on a server it runs
// once per completed handshake, so it counts them.
func (s *Store) countHandshake(cs tls.ConnectionState) error {
	alpn := cs.NegotiatedProtocol
	if alpn == "" {
		alpn = "none"
	}
	s.metrics.handshakes.WithLabelValues(tls.VersionName(cs.Version), alpn).Inc()
	return nil
}

// HandshakeErrorLog returns the writer for the TLS listeners' server
// ErrorLog. net/http reports a failed handshake only there ("http: TLS
// handshake error from <addr>: <error>"), so each such line is counted by
// reason and logged at debug level (a scanner produces many); every other
// line goes to log as a warning.
func (s *Store) HandshakeErrorLog(log zerolog.Logger) io.Writer {
	return &handshakeLog{m: s.metrics, log: log}
}

type handshakeLog struct {
	m   *metrics
	log zerolog.Logger
}

const handshakePrefix = "http: TLS handshake error from "

func (h *handshakeLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	rest, ok := strings.CutPrefix(line, handshakePrefix)
	if !ok {
		h.log.Warn().Msg(line)
		return len(p), nil
	}
	addr, reason, _ := strings.Cut(rest, ": ")
	kind := HandshakeReason(reason)
	h.m.errors.WithLabelValues(kind).Inc()
	h.log.Debug().Str("client", addr).Str("reason", kind).Msg("TLS handshake failed: " + reason)
	return len(p), nil
}

// HandshakeReason sorts a handshake error's text into a few reasons.
func HandshakeReason(msg string) string {
	switch {
	case msg == io.EOF.Error() || strings.Contains(msg, "EOF") || strings.Contains(msg, "connection reset"):
		return "eof"
	case strings.Contains(msg, "timeout"):
		return "timeout"
	case strings.Contains(msg, "protocol version") || strings.Contains(msg, "unsupported versions"):
		return "version"
	case strings.Contains(msg, "cipher suite") || strings.Contains(msg, "no cipher"):
		return "cipher"
	case strings.Contains(msg, "certificate"):
		return "certificate"
	case strings.Contains(msg, "alert"):
		return "alert"
	}
	return "other"
}
