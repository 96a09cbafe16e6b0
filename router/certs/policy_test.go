package certs

import (
	"crypto/tls"
	stdlog "log"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

func counter(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue metric
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// The TLS listener's policy, end to end with net/http's server: TLS 1.0
// and 1.1 and CBC suites are refused (and counted by reason), TLS 1.2 and
// 1.3 are served, h2 is negotiated by ALPN.
func TestTLSPolicy(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.Proto)) }),
		TLSConfig: s.Config(false),
		ErrorLog:  stdlog.New(s.HandshakeErrorLog(zerolog.Nop()), "", 0),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()
	dial := func(cfg *tls.Config) (*tls.Conn, error) {
		cfg.InsecureSkipVerify = true // the default certificate is self-signed
		cfg.ServerName = "unknown.example.com"
		d := &net.Dialer{Timeout: 5 * time.Second}
		return tls.DialWithDialer(d, "tcp", addr, cfg)
	}
	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		if c, err := dial(&tls.Config{MinVersion: v, MaxVersion: v}); err == nil {
			c.Close()
			t.Errorf("%s accepted", tls.VersionName(v))
		}
	}
	if c, err := dial(&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA}}); err == nil {
		c.Close()
		t.Error("a CBC suite accepted")
	}
	for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		c, err := dial(&tls.Config{MinVersion: v, MaxVersion: v, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			t.Fatalf("%s: %v", tls.VersionName(v), err)
		}
		st := c.ConnectionState()
		if st.NegotiatedProtocol != "h2" {
			t.Errorf("%s: ALPN %q, want h2", tls.VersionName(v), st.NegotiatedProtocol)
		}
		if st.PeerCertificates[0].Subject.CommonName != "Levee default certificate" {
			t.Errorf("unknown SNI served %q", st.PeerCertificates[0].Subject.CommonName)
		}
		c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for counter(t, reg, "levee_tls_handshakes_total", map[string]string{"version": "TLS 1.3", "alpn": "h2"}) != 1 ||
		counter(t, reg, "levee_tls_handshake_errors_total", map[string]string{"reason": "version"}) != 2 ||
		counter(t, reg, "levee_tls_handshake_errors_total", map[string]string{"reason": "cipher"}) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("handshakes not counted: TLS 1.3 h2 %v, errors version %v, cipher %v",
				counter(t, reg, "levee_tls_handshakes_total", map[string]string{"version": "TLS 1.3", "alpn": "h2"}),
				counter(t, reg, "levee_tls_handshake_errors_total", map[string]string{"reason": "version"}),
				counter(t, reg, "levee_tls_handshake_errors_total", map[string]string{"reason": "cipher"}))
		}
		time.Sleep(5 * time.Millisecond) // the server finishes after the client
	}
}
