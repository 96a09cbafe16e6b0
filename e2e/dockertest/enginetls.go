package dockertest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// EngineCerts writes, under dir, a fresh CA and two certificates it
// signs, in the Docker CLI's DOCKER_CERT_PATH layout: dir/server holds
// ca.pem, cert.pem and key.pem for an engine on 127.0.0.1, dir/client the
// same for a client. Another call gives another CA, whose client an
// engine of the first refuses.
func EngineCerts(t testing.TB, dir string) (server, client string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "levee test engine CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	server, client = filepath.Join(dir, "server"), filepath.Join(dir, "client")
	for i, leaf := range []struct {
		dir   string
		usage x509.ExtKeyUsage
	}{{server, x509.ExtKeyUsageServerAuth}, {client, x509.ExtKeyUsageClientAuth}} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(int64(i + 2)), Subject: pkix.Name{CommonName: fmt.Sprintf("levee test %d", i)},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{leaf.usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(leaf.dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, block := range map[string]*pem.Block{
			"ca.pem": {Type: "CERTIFICATE", Bytes: caDER}, "cert.pem": {Type: "CERTIFICATE", Bytes: der}, "key.pem": {Type: "EC PRIVATE KEY", Bytes: keyDER},
		} {
			if err := os.WriteFile(filepath.Join(leaf.dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return server, client
}
