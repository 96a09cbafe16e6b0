package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ParseFilePair reads one CERT[,KEY] item, as --tls-cert and a route's
// tls.clientCert take it: PEM files of a certificate chain and its key,
// whatever their names, KEY left out when CERT holds both.
func ParseFilePair(item string) (FilePair, error) {
	parts := strings.Split(strings.TrimSpace(item), ",")
	if len(parts) > 2 || strings.TrimSpace(parts[0]) == "" || (len(parts) == 2 && strings.TrimSpace(parts[1]) == "") {
		return FilePair{}, fmt.Errorf("%q: want CERT[,KEY]: PEM files of a certificate chain and its key (KEY left out when CERT holds both)", item)
	}
	p := FilePair{Cert: strings.TrimSpace(parts[0])}
	if len(parts) == 2 {
		p.Key = strings.TrimSpace(parts[1])
	}
	return p, nil
}

// BackendOptions are a route's settings for speaking TLS to its backends.
type BackendOptions struct {
	// ServerName is sent in SNI and verified; empty: the transport uses
	// each backend's host.
	ServerName string
	// CAFile is a PEM file of CA certificates; empty: the system roots.
	CAFile string
	// ClientCert is CERT[,KEY], presented to backends that ask; empty:
	// none.
	ClientCert string
	// InsecureSkipVerify accepts any backend certificate.
	InsecureSkipVerify bool
}

// Settings a BackendError names.
const (
	SettingCA         = "ca"
	SettingClientCert = "clientCert"
)

// BackendError is a backend TLS setting that cannot be used.
type BackendError struct {
	// Setting is SettingCA or SettingClientCert.
	Setting string
	Err     error
}

func (e *BackendError) Error() string { return e.Err.Error() }
func (e *BackendError) Unwrap() error { return e.Err }

// backendSessionCache bounds the TLS sessions kept per route for
// resumption (RFC 8446 2.2): one per backend host is enough.
const backendSessionCache = 64

// BackendConfig compiles a route's backend TLS settings into the client
// configuration of its backend connections: TLS 1.2 or later, HTTP/1.1
// by ALPN, a session cache of its own for resumption. Any file that
// cannot be used is an error naming it: the caller must then not talk to
// the backends at all, never with weaker verification.
func BackendConfig(o BackendOptions) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.ServerName,
		NextProtos:         []string{ProtoHTTP11},
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // asked for, and reported (W006)
		ClientSessionCache: tls.NewLRUClientSessionCache(backendSessionCache),
	}
	if o.CAFile != "" {
		pool, err := loadCAFile(o.CAFile)
		if err != nil {
			return nil, &BackendError{Setting: SettingCA, Err: err}
		}
		c.RootCAs = pool
	}
	if o.ClientCert != "" {
		p, err := ParseFilePair(o.ClientCert)
		if err != nil {
			return nil, &BackendError{Setting: SettingClientCert, Err: fmt.Errorf("client certificate %w", err)}
		}
		cert, err := loadClientPair(p)
		if err != nil {
			return nil, &BackendError{Setting: SettingClientCert, Err: err}
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// BackendFilesSignature describes the files o names (names, sizes,
// modification times): equal signatures mean BackendConfig would read the
// same files, so a configuration compiled before can be kept (with its
// session cache and its connection pool).
func BackendFilesSignature(o BackendOptions) string {
	files := []FilePair{{Cert: o.CAFile}}
	if p, err := ParseFilePair(o.ClientCert); err == nil {
		files = append(files, p)
	}
	return filesSignature(files)
}

// loadCAFile reads a PEM file of CA certificates.
func loadCAFile(name string) (*x509.CertPool, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading CA file %s: %w", name, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", name)
	}
	return pool, nil
}

// loadClientPair reads a client certificate chain and its key. Unlike a
// listener's certificate it need not name a DNS name.
func loadClientPair(p FilePair) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(p.Cert)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("reading client certificate %s: %w", p.Cert, err)
	}
	keyPEM, keyFile := certPEM, p.Cert
	if p.Key != "" {
		keyFile = p.Key
		if keyPEM, err = os.ReadFile(p.Key); err != nil {
			return tls.Certificate{}, fmt.Errorf("reading client key %s: %w", p.Key, err)
		}
	} else if !hasPEMKey(certPEM) {
		return tls.Certificate{}, errors.New("client certificate " + p.Cert + " has no key: want CERT,KEY or one PEM file holding both")
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("client certificate %s with key %s: %w", p.Cert, keyFile, err)
	}
	return c, nil
}
