package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

var testNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

// testCA signs leaf certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Levee Test CA"},
		NotBefore: testNow.AddDate(-1, 0, 0), NotAfter: testNow.AddDate(5, 0, 0), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return &testCA{cert: c, key: key, pool: pool}
}

// leaf returns PEM certificate and key for names, valid in [from, to].
func (ca *testCA) leaf(t testing.TB, from, to time.Time, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: from, NotAfter: to, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// valid returns a leaf valid around testNow.
func (ca *testCA) valid(t testing.TB, names ...string) (certPEM, keyPEM []byte) {
	return ca.leaf(t, testNow.AddDate(0, -1, 0), testNow.AddDate(0, 2, 0), names...)
}

func writeFile(t testing.TB, dir, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeSink records the store's diagnostics.
type fakeSink struct {
	mu    sync.Mutex
	diags []diagnostics.Diagnostic
	n     int
}

func (f *fakeSink) Update(u config.SourceUpdate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.diags, f.n = u.Diagnostics, f.n+1
}

func (f *fakeSink) get() []diagnostics.Diagnostic {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]diagnostics.Diagnostic(nil), f.diags...)
}
