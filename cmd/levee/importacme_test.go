package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// acmeJSONPair is a self-signed certificate for name and its key, base64
// PEM as Traefik's acme.json holds them.
func acmeJSONPair(t *testing.T, name string) (string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	enc := base64.StdEncoding.EncodeToString
	return enc(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), enc(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// levee import-acme writes each certificate under the storage of the CA
// given (by flag or LEVEE_ACME_CA), keeps what is there on a second run,
// and exits 1 naming a pair it could not read.
func TestImportACMECommand(t *testing.T) {
	dir := t.TempDir()
	c, k := acmeJSONPair(t, "shop.example.com")
	bad, _ := acmeJSONPair(t, "bad.example.com")
	file := filepath.Join(dir, "acme.json")
	body := fmt.Sprintf(`{"le":{"Account":{"Email":"ops@example.com"},"Certificates":[{"domain":{"main":"shop.example.com"},"certificate":%q,"key":%q,"Store":"default"}]}}`, c, k)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(dir, "certs")
	env := envOf(map[string]string{"LEVEE_ACME_CA": "https://ca.example.net/acme/directory"})
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"import-acme", "--cert-dir", certDir, file}, &out, &errOut, env); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if out.String() != "imported shop.example.com\n" {
		t.Errorf("output %q", out.String())
	}
	stored := filepath.Join(certDir, "certificates", "ca.example.net-acme-directory", "shop.example.com", "shop.example.com.crt")
	if _, err := os.Stat(stored); err != nil {
		t.Errorf("not stored under the CA's issuer key: %v", err)
	}
	out.Reset()
	if code := run(context.Background(), []string{"import-acme", "--cert-dir", certDir, file}, &out, &errOut, env); code != 0 || !strings.HasPrefix(out.String(), "kept shop.example.com") {
		t.Errorf("second run: exit %d, %q", code, out.String())
	}

	body = fmt.Sprintf(`{"le":{"Certificates":[{"domain":{"main":"bad.example.com"},"certificate":%q,"key":%q}]}}`, bad, k)
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"import-acme", "--cert-dir", certDir, file}, &out, &errOut, env); code != 1 || !strings.Contains(errOut.String(), `resolver "le", certificate 0 (bad.example.com)`) {
		t.Errorf("mismatched pair: exit %d, %q", code, errOut.String())
	}
	if code := run(context.Background(), []string{"import-acme"}, &out, &errOut, env); code != 2 {
		t.Errorf("no file: exit %d, want 2", code)
	}
}
