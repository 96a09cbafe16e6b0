package client

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial atomic.Int64

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: "Levee test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// issue makes a leaf certificate for names (DNS names or IPs), valid
// from notBefore to notAfter, signed by ca (nil: self-signed).
func (ca *testCA) issue(t *testing.T, names []string, notBefore, notAfter time.Time, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (ca *testCA) server(t *testing.T, names ...string) tls.Certificate {
	return ca.issue(t, names, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), x509.ExtKeyUsageServerAuth)
}

// tlsBackend serves "ok" over TLS with cert; clientCAs, when not nil,
// requires a client certificate from them.
func tlsBackend(t *testing.T, cert tls.Certificate, clientCAs *x509.CertPool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// bothClients runs f with Levee's own client and with Standard, each
// speaking TLS with cfg.
func bothClients(t *testing.T, cfg *tls.Config, f func(t *testing.T, rt backendRoundTripper)) {
	t.Run("levee", func(t *testing.T) {
		tr := New(Options{DialTimeout: 2 * time.Second, IdleConnTimeout: time.Minute, MaxIdleConnsPerHost: 4, TLS: cfg})
		defer tr.Shutdown()
		f(t, tr)
	})
	t.Run("stdlib", func(t *testing.T) {
		tr := NewStandard(&http.Transport{TLSClientConfig: cfg, TLSHandshakeTimeout: 2 * time.Second, MaxIdleConnsPerHost: 4}, 0)
		defer tr.CloseIdleConnections()
		f(t, tr)
	})
}

type backendRoundTripper interface {
	RoundTripInformational(req *http.Request, inf Informer) (*http.Response, error)
}

// get asks srv for / through rt and returns the body or the error.
func get(t *testing.T, rt backendRoundTripper, srv *httptest.Server) (string, error) {
	t.Helper()
	addr := strings.TrimPrefix(srv.URL, "https://")
	req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/", nil)
	resp, err := rt.RoundTripInformational(req, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func tlsConfig(roots *x509.CertPool, serverName string) *tls.Config {
	return &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(8)}
}

func wantTLSError(t *testing.T, err error, reason string) {
	t.Helper()
	var te *TLSError
	if !errors.As(err, &te) {
		t.Fatalf("error %v (%T), want a *TLSError %q", err, err, reason)
	}
	if te.Reason != reason {
		t.Fatalf("reason %q (%v), want %q", te.Reason, te, reason)
	}
}

func TestTLSBackendVerified(t *testing.T) {
	ca := newTestCA(t)
	srv := tlsBackend(t, ca.server(t, "backend.test", "127.0.0.1"), nil)
	for _, name := range []string{"backend.test", ""} { // "": the backend's address, 127.0.0.1
		bothClients(t, tlsConfig(ca.pool, name), func(t *testing.T, rt backendRoundTripper) {
			for range 2 { // the second on the pooled connection
				if body, err := get(t, rt, srv); err != nil || body != "ok" {
					t.Fatalf("server name %q: %q, %v; want ok", name, body, err)
				}
			}
		})
	}
}

func TestTLSBackendWrongName(t *testing.T) {
	ca := newTestCA(t)
	srv := tlsBackend(t, ca.server(t, "other.test"), nil)
	bothClients(t, tlsConfig(ca.pool, "backend.test"), func(t *testing.T, rt backendRoundTripper) {
		_, err := get(t, rt, srv)
		wantTLSError(t, err, ReasonNameMismatch)
	})
}

func TestTLSBackendExpired(t *testing.T) {
	ca := newTestCA(t)
	cert := ca.issue(t, []string{"backend.test"}, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour), x509.ExtKeyUsageServerAuth)
	srv := tlsBackend(t, cert, nil)
	bothClients(t, tlsConfig(ca.pool, "backend.test"), func(t *testing.T, rt backendRoundTripper) {
		_, err := get(t, rt, srv)
		wantTLSError(t, err, ReasonExpired)
	})
}

func TestTLSBackendSelfSigned(t *testing.T) {
	ca := newTestCA(t)
	var none *testCA
	srv := tlsBackend(t, none.server(t, "backend.test"), nil)
	bothClients(t, tlsConfig(ca.pool, "backend.test"), func(t *testing.T, rt backendRoundTripper) {
		_, err := get(t, rt, srv)
		wantTLSError(t, err, ReasonUnknownAuthority)
	})
	insecure := tlsConfig(nil, "backend.test")
	insecure.InsecureSkipVerify = true
	bothClients(t, insecure, func(t *testing.T, rt backendRoundTripper) {
		if body, err := get(t, rt, srv); err != nil || body != "ok" {
			t.Fatalf("insecureSkipVerify: %q, %v; want ok", body, err)
		}
	})
}

func TestTLSBackendRequiresClientCert(t *testing.T) {
	ca, clientCA := newTestCA(t), newTestCA(t)
	srv := tlsBackend(t, ca.server(t, "backend.test"), clientCA.pool)
	bothClients(t, tlsConfig(ca.pool, "backend.test"), func(t *testing.T, rt backendRoundTripper) {
		_, err := get(t, rt, srv)
		wantTLSError(t, err, ReasonClientCert)
	})
	withCert := tlsConfig(ca.pool, "backend.test")
	withCert.Certificates = []tls.Certificate{clientCA.issue(t, []string{"levee"}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), x509.ExtKeyUsageClientAuth)}
	bothClients(t, withCert, func(t *testing.T, rt backendRoundTripper) {
		if body, err := get(t, rt, srv); err != nil || body != "ok" {
			t.Fatalf("with client certificate: %q, %v; want ok", body, err)
		}
	})
}

// A backend that accepts and never speaks TLS: the handshake ends at the
// dial timeout, named as such.
func TestTLSBackendHandshakeTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr := New(Options{DialTimeout: 200 * time.Millisecond, IdleConnTimeout: time.Minute, TLS: tlsConfig(nil, "backend.test")})
	defer tr.Shutdown()
	req, _ := http.NewRequest(http.MethodGet, "https://"+ln.Addr().String()+"/", nil)
	start := time.Now()
	_, err = tr.RoundTrip(req)
	wantTLSError(t, err, ReasonTimeout)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("handshake gave up after %s, want about the dial timeout", d)
	}
}

// TLS sessions are resumed on a new connection (RFC 8446 2.2).
func TestTLSBackendResumesSessions(t *testing.T) {
	ca := newTestCA(t)
	srv := tlsBackend(t, ca.server(t, "backend.test"), nil)
	var resumed atomic.Int32
	cfg := tlsConfig(ca.pool, "backend.test")
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if cs.DidResume {
			resumed.Add(1)
		}
		return nil
	}
	tr := New(Options{DialTimeout: 2 * time.Second, IdleConnTimeout: time.Minute, MaxIdleConnsPerHost: 4, TLS: cfg})
	defer tr.Shutdown()
	for range 2 {
		if body, err := get(t, tr, srv); err != nil || body != "ok" {
			t.Fatalf("%q, %v", body, err)
		}
		tr.CloseIdleConnections()
	}
	if resumed.Load() != 1 {
		t.Fatalf("%d resumed handshakes, want the second to resume", resumed.Load())
	}
}
