package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// backendCA is a certificate authority made for one test, with its
// certificate in a PEM file.
type backendCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string
}

func newBackendCA(t *testing.T, dir, name string) *backendCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &backendCA{cert: cert, key: key, file: filepath.Join(dir, name+".pem")}
	writePEM(t, ca.file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return ca
}

// issue returns a certificate for dnsName with the given usage, and
// writes it with its key to file when file is not empty.
func (ca *backendCA) issue(t *testing.T, dnsName string, usage x509.ExtKeyUsage, file string) tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: dnsName},
		DNSNames: []string{dnsName}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if file != "" {
		kb, _ := x509.MarshalECPrivateKey(key)
		writePEM(t, file, append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})...))
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func writePEM(t *testing.T, file string, b []byte) {
	t.Helper()
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A Portainer-style backend through the binary: HTTPS only, a
// certificate from a private CA for a name that is not its address, and
// mutual TLS. Registered through the API on loopback (not a container):
// the route with tls.serverName, tls.ca and tls.clientCert is served;
// without the client certificate it is 502 backend-tls with the reason
// logged; with an unreadable CA, 502 backend-tls-misconfigured and a W005
// naming the file, and the backend never sees a request.
func TestHTTPSBackendThroughTheBinary(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := newBackendCA(t, dir, "internal-ca"), newBackendCA(t, dir, "client-ca")
	clientFile := filepath.Join(dir, "levee.pem")
	clientCA.issue(t, "levee", x509.ExtKeyUsageClientAuth, clientFile)
	pool := x509.NewCertPool()
	pool.AddCert(clientCA.cert)
	var hits atomic.Int64
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "portainer sees %s over TLS, client %s", r.Host, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	backend.TLS = &tls.Config{Certificates: []tls.Certificate{serverCA.issue(t, "portainer.internal", x509.ExtKeyUsageServerAuth, "")},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	backend.Config.ErrorLog = log.New(io.Discard, "", 0)
	backend.StartTLS()
	defer backend.Close()
	port := portOf(t, backend.URL)

	p := startLevee(t, "--docker=false")
	add := func(name, tlsFields string) {
		createEntrypoint(t, p, fmt.Sprintf(`{"name":%q,"protocol":"Http",
			"backends":[{"address":"127.0.0.1","port":%s,"weight":100}],
			"config":{"hostnames":["%s.test"],"scheme":"https","tls":{%s}}}`, name, port, name, tlsFields))
	}
	add("admin", fmt.Sprintf(`"server_name":"portainer.internal","ca":%q,"client_cert":%q`, serverCA.file, clientFile))
	add("nocert", fmt.Sprintf(`"server_name":"portainer.internal","ca":%q`, serverCA.file))
	missing := filepath.Join(dir, "missing-ca.pem")
	add("badca", fmt.Sprintf(`"server_name":"portainer.internal","ca":%q,"client_cert":%q`, missing, clientFile))

	status, _, body := get(t, p.proxyURL()+"/", "admin.test")
	if status != 200 || !strings.Contains(body, "over TLS, client levee") {
		t.Fatalf("admin: %d %q, want the backend's answer over mutual TLS", status, body)
	}
	status, hdr, _ := get(t, p.proxyURL()+"/", "nocert.test")
	if status != http.StatusBadGateway || hdr.Get("X-Levee-Diagnostic") != "backend-tls" {
		t.Fatalf("nocert: %d %q, want 502 backend-tls", status, hdr.Get("X-Levee-Diagnostic"))
	}
	p.waitLog(10*time.Second, func(m map[string]any) bool {
		return m["event"] == "backend_tls_failed" && m["route"] == "nocert" && m["reason"] == "client certificate refused"
	})
	status, hdr, _ = get(t, p.proxyURL()+"/", "badca.test")
	if status != http.StatusBadGateway || hdr.Get("X-Levee-Diagnostic") != "backend-tls-misconfigured" {
		t.Fatalf("badca: %d %q, want 502 backend-tls-misconfigured", status, hdr.Get("X-Levee-Diagnostic"))
	}
	_, _, diags := get(t, p.apiURL()+"/diagnostics", "")
	if !strings.Contains(diags, "W005") || !strings.Contains(diags, missing) {
		t.Fatalf("diagnostics %s: want a W005 naming %s", diags, missing)
	}
	if n := hits.Load(); n != 1 {
		t.Fatalf("the backend served %d requests, want only admin's", n)
	}
}
