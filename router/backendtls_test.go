package router

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

func writeTestCA(t *testing.T, file string, serial int64) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A rebuild of an HTTPS route with the same settings and files keeps its
// compiled TLS configuration (so its connection pool and session cache);
// a changed CA file is read again.
func TestBackendTLSKeptAcrossRebuilds(t *testing.T) {
	r := New(Options{RemovedRouteGrace: time.Minute})
	defer r.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writeTestCA(t, ca, 1)
	a := route("a", "/", "a.test")
	a.Scheme, a.BackendTLS = config.SchemeHTTPS, config.BackendTLS{CA: ca}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{a}})
	rt1, _ := r.Snapshot().Route("a")
	cfg1, err := rt1.BackendTLS()
	if err != nil || cfg1 == nil || cfg1.RootCAs == nil {
		t.Fatalf("BackendTLS = %v, %v; want a config with the CA", cfg1, err)
	}

	a2 := a
	a2.Backends = append(append([]config.Backend(nil), a.Backends...), config.Backend{Address: "127.0.0.2", Port: 1, Weight: config.DefaultWeight})
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{a2}})
	rt2, _ := r.Snapshot().Route("a")
	if cfg2, _ := rt2.BackendTLS(); rt2 == rt1 || cfg2 != cfg1 {
		t.Fatalf("backend added: route rebuilt %v, same config %v; want a rebuild keeping the config", rt2 != rt1, cfg2 == cfg1)
	}

	writeTestCA(t, ca, 22222222) // another size: another file
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{a}})
	rt3, _ := r.Snapshot().Route("a")
	if cfg3, _ := rt3.BackendTLS(); cfg3 == cfg1 {
		t.Fatal("CA file changed: the old configuration was kept")
	}
}
