package e2e

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/levee-proxy/levee/e2e/browsertest"
)

// Chromium's own QUIC and HTTP/3 stack loads a page from Levee over
// HTTP/3, and the access log says so. The certificate is trusted by its
// public key, which Chromium honours for QUIC only on an origin forced
// onto QUIC (origin-to-force-quic-on): an upgrade by Alt-Svc would need a
// certificate from a known root. (Chromium does try QUIC after the
// advertisement; the advertisement itself is TestHTTP3ThroughTheBinary's.)
func TestHTTP3Chromium(t *testing.T) {
	browsertest.Find(t)
	ca := newE2ECA(t)
	dir := t.TempDir()
	ca.issue(t, dir, "app", "app.test")
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>h3</title><p>ok</p>")
	}))
	defer backend.Close()

	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls,h3", "--tls-cert-dir", dir)
	secure := p.listenerAddr("websecure")
	_, port, _ := net.SplitHostPort(secure)
	bhost, bport, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"app","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["app.test"],"tls":true}}`, bhost, bport))
	tcp := httpsClient(secure, ca.pool)
	waitFor(t, "the route", func() error {
		resp, err := tcp.Get("https://app.test/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})

	b := browsertest.StartWith(t,
		chromedp.Flag("ignore-certificate-errors-spki-list", spkiHash(t, filepath.Join(dir, "app.crt"))),
		chromedp.Flag("host-resolver-rules", "MAP app.test 127.0.0.1"),
		chromedp.Flag("enable-quic", true),
		chromedp.Flag("origin-to-force-quic-on", "app.test:"+port),
	)
	tab := b.Tab(t)
	browsertest.Run(t, tab, 20*time.Second, "open the page", chromedp.Navigate("https://app.test:"+port+"/"))
	browsertest.MustWait(t, tab, 20*time.Second, `performance.getEntriesByType("navigation")[0].nextHopProtocol === "h3"`)
	p.waitLog(10*time.Second, func(m map[string]any) bool {
		return m["proto"] == "HTTP/3.0" && m["host"] == "app.test:"+port
	})
}

// spkiHash is the base64 SHA-256 of the certificate's public key, as
// Chromium's --ignore-certificate-errors-spki-list takes it.
func spkiHash(t *testing.T, certFile string) string {
	t.Helper()
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM block", certFile)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}
