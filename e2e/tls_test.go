package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// e2eCA is a throw-away CA for the TLS tests.
type e2eCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newE2ECA(t *testing.T) *e2eCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Levee e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return &e2eCA{cert: c, key: key, pool: pool}
}

// issue writes name.crt and name.key for the DNS names into dir.
func (ca *e2eCA) issue(t *testing.T, dir, name string, names ...string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	// The key first: the directory poll must not see a certificate
	// without its key and report it.
	if err := os.WriteFile(filepath.Join(dir, name+".key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// httpsClient speaks to addr whatever the URL's host, trusting pool, with
// HTTP/2 allowed.
func httpsClient(addr string, pool *x509.CertPool) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// listenerAddr is the address the named proxy listener logged.
func (p *leveeProc) listenerAddr(name string) string {
	p.t.Helper()
	line := p.waitLog(10*time.Second, func(m map[string]any) bool {
		return m["message"] == "listening" && m["listener"] == "proxy" && m["name"] == name
	})
	return fmt.Sprint(line["addr"])
}

// HTTPS through the binary with a static certificate: SNI chooses it,
// HTTP/2 is negotiated, HSTS is sent, plain HTTP is redirected with path
// and query, TLS 1.1 is refused, GET /certificates lists it, and a
// certificate added to the directory is served without a restart.
func TestTLSStaticCertificates(t *testing.T) {
	ca := newE2ECA(t)
	dir, elsewhere := t.TempDir(), t.TempDir()
	ca.issue(t, dir, "shop", "shop.test")
	// One more by --tls-cert, under names of its own (as certbot's).
	ca.issue(t, elsewhere, "fullchain", "pair.test")
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%s %s %s", r.Host, r.URL.RequestURI(), r.Header.Get("X-Forwarded-Proto"))
	}))
	defer backend.Close()
	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls", "--tls-cert-dir", dir,
		"--tls-cert", filepath.Join(elsewhere, "fullchain.crt")+","+filepath.Join(elsewhere, "fullchain.key"))
	secure := p.listenerAddr("websecure")
	_, port, _ := net.SplitHostPort(secure)

	host, bport, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	payload := fmt.Sprintf(`{"name":"shop","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["shop.test","new.test","pair.test"],"tls":{"enabled":true,"hsts":31536000}}}`, host, bport)
	createEntrypoint(t, p, payload)

	c := httpsClient(secure, ca.pool)
	waitFor(t, "the route over HTTPS", func() error {
		resp, err := c.Get("https://shop.test/a?b=1")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		switch {
		case resp.StatusCode != 200:
			return fmt.Errorf("status %d %s", resp.StatusCode, got)
		case resp.ProtoMajor != 2:
			return fmt.Errorf("protocol %s, want HTTP/2", resp.Proto)
		case string(got) != "shop.test /a?b=1 https":
			return fmt.Errorf("backend saw %q", got)
		case resp.Header.Get("Strict-Transport-Security") != "max-age=31536000":
			return fmt.Errorf("HSTS %q", resp.Header.Get("Strict-Transport-Security"))
		}
		return nil
	})

	if resp, err := c.Get("https://pair.test/"); err != nil {
		t.Errorf("pair.test, a --tls-cert certificate: %v", err)
	} else {
		resp.Body.Close()
	}

	req, _ := http.NewRequest("GET", p.proxyURL()+"/a/b?c=d", nil)
	req.Host = "shop.test"
	resp, err := httpsClient(p.ProxyAddr, nil).Transport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if want := "https://shop.test:" + port + "/a/b?c=d"; resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
		t.Errorf("plain HTTP: %d Location %q, want 308 %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}

	for _, v := range []uint16{tls.VersionTLS10, tls.VersionTLS11} {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", secure,
			&tls.Config{ServerName: "shop.test", RootCAs: ca.pool, MinVersion: v, MaxVersion: v})
		if err == nil {
			conn.Close()
			t.Errorf("%s accepted", tls.VersionName(v))
		}
	}

	// new.test has no certificate yet: the default one, which the CA
	// does not sign.
	if _, err := c.Get("https://new.test/"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("new.test before its certificate: %v", err)
	}
	ca.issue(t, dir, "new", "new.test")
	waitFor(t, "the added certificate", func() error {
		resp, err := c.Get("https://new.test/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		return nil
	})

	resp, err = http.Get(p.apiURL() + "/certificates")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Certificates []struct{ Host, Source, Issuer string } `json:"certificates"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range list.Certificates {
		got[c.Host] = c.Source + " " + c.Issuer
	}
	if got["shop.test"] != "static Levee e2e CA" || got["new.test"] != "static Levee e2e CA" || got["pair.test"] != "static Levee e2e CA" || !strings.HasPrefix(got["*"], "default") {
		t.Errorf("GET /certificates: %v", got)
	}
}

// waitFor polls check until it succeeds or 20 seconds pass.
func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	waitForWithin(t, 20*time.Second, what, check)
}

// waitForWithin is waitFor with its own deadline.
func waitForWithin(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not synchronisation
	}
}

// Routes checked against the declared listeners: a TLS route without a
// TLS listener is W047, a route naming an unknown listener W046; both
// resolve when the route is fixed.
func TestListenerDiagnostics(t *testing.T) {
	p := startLevee(t, "--docker=false")
	post := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, p.apiURL()+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	diags := func() string {
		resp, err := http.Get(p.apiURL() + "/diagnostics?code=W046,W047")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post("POST", "/entrypoints", `{"name":"a","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["a.test"],"tls":true}}`)
	post("POST", "/entrypoints", `{"name":"b","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["b.test"],"listeners":["web","admin"]}}`)
	waitFor(t, "W046 and W047", func() error {
		if d := diags(); !strings.Contains(d, `"W047"`) || !strings.Contains(d, `"W046"`) || !strings.Contains(d, `"admin"`) {
			return fmt.Errorf("%s", d)
		}
		return nil
	})
	post("PUT", "/entrypoints/a", `{"name":"a","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["a.test"]}}`)
	post("PUT", "/entrypoints/b", `{"name":"b","backends":[{"address":"127.0.0.1","port":9}],"config":{"hostnames":["b.test"],"listeners":["web"]}}`)
	waitFor(t, "the diagnostics to resolve", func() error {
		if d := diags(); strings.Contains(d, `"W04`) {
			return fmt.Errorf("%s", d)
		}
		return nil
	})
}
