// Package backendtls compiles a route's settings for speaking TLS to its
// backends (scheme=https: tls.serverName, tls.ca, tls.clientCert,
// tls.insecureSkipVerify) into a client configuration, once per route, and
// says when the files behind it changed. A file it cannot use is an
// error: the route must then not talk to its backends at all, never with
// weaker verification. It imports only the standard library and certfile,
// so the data plane does not carry the listener's certificate store.
package backendtls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/levee-proxy/levee/router/certs/certfile"
)

// Options are a route's settings for speaking TLS to its backends.
type Options struct {
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

// Settings a Error names.
const (
	SettingCA         = "ca"
	SettingClientCert = "clientCert"
)

// Error is a backend TLS setting that cannot be used.
type Error struct {
	// Setting is SettingCA or SettingClientCert.
	Setting string
	Err     error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// sessionCache bounds the TLS sessions kept per route for
// resumption (RFC 8446 2.2): one per backend host is enough.
const sessionCache = 64

// Config compiles a route's backend TLS settings into the client
// configuration of its backend connections: TLS 1.2 or later, HTTP/1.1
// by ALPN, a session cache of its own for resumption. Any file that
// cannot be used is an error naming it: the caller must then not talk to
// the backends at all, never with weaker verification.
func Config(o Options) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         o.ServerName,
		NextProtos:         []string{"http/1.1"},
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // asked for, and reported (W006)
		ClientSessionCache: tls.NewLRUClientSessionCache(sessionCache),
	}
	if o.CAFile != "" {
		pool, err := loadCAFile(o.CAFile)
		if err != nil {
			return nil, &Error{Setting: SettingCA, Err: err}
		}
		c.RootCAs = pool
	}
	if o.ClientCert != "" {
		p, err := certfile.ParsePair(o.ClientCert)
		if err != nil {
			return nil, &Error{Setting: SettingClientCert, Err: fmt.Errorf("client certificate %w", err)}
		}
		cert, err := loadClientPair(p)
		if err != nil {
			return nil, &Error{Setting: SettingClientCert, Err: err}
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// FilesSignature describes the files o names (names, sizes,
// modification times): equal signatures mean Config would read the
// same files, so a configuration compiled before can be kept (with its
// session cache and its connection pool).
func FilesSignature(o Options) string {
	files := []certfile.Pair{{Cert: o.CAFile}}
	if p, err := certfile.ParsePair(o.ClientCert); err == nil {
		files = append(files, p)
	}
	return certfile.Signature(files)
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
func loadClientPair(p certfile.Pair) (tls.Certificate, error) {
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
	} else if !certfile.HasPEMKey(certPEM) {
		return tls.Certificate{}, errors.New("client certificate " + p.Cert + " has no key: want CERT,KEY or one PEM file holding both")
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("client certificate %s with key %s: %w", p.Cert, keyFile, err)
	}
	return c, nil
}
