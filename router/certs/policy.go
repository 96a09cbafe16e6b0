package certs

import "crypto/tls"

// ALPN protocol names (RFC 7301; h2 is RFC 9113 3.2, acme-tls/1 RFC 8737).
const (
	ProtoH2      = "h2"
	ProtoHTTP11  = "http/1.1"
	ProtoACMETLS = "acme-tls/1"
)

// cipherSuites are the TLS 1.2 suites Levee offers: forward secrecy
// (ECDHE) and AEAD only. Go's defaults also include CBC suites, which
// scanners rightly flag (Lucky13-style padding oracles); every client of
// the last decade speaks one of these.
var cipherSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// Config returns the TLS listeners' configuration: Levee's policy with
// certificates from s. acmeTLS adds the acme-tls/1 protocol for the
// TLS-ALPN-01 challenge.
func (s *Store) Config(acmeTLS bool) *tls.Config {
	protos := []string{ProtoH2, ProtoHTTP11}
	if acmeTLS {
		protos = append(protos, ProtoACMETLS)
	}
	return &tls.Config{
		MinVersion:       tls.VersionTLS12,
		CipherSuites:     cipherSuites,
		NextProtos:       protos,
		GetCertificate:   s.GetCertificate,
		VerifyConnection: s.countHandshake,
	}
}
