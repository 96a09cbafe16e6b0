package proxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// httpsBackend is an HTTPS server on 127.0.0.1 with httptest's
// certificate (names example.com and 127.0.0.1), its CA in a PEM file.
type httpsBackend struct {
	srv    *httptest.Server
	caFile string
	hits   atomic.Int64
}

func newHTTPSBackend(t *testing.T) *httpsBackend { return newHTTPSBackendWith(t, nil) }

// newHTTPSBackendWith serves cert instead of httptest's (nil: httptest's).
func newHTTPSBackendWith(t *testing.T, cert *tls.Certificate) *httpsBackend {
	t.Helper()
	b := &httpsBackend{}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.hits.Add(1)
		_, _ = io.WriteString(w, "ok over "+strconv.Itoa(int(r.TLS.Version-0x0300+1)))
	}))
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if cert != nil {
		b.srv.TLS = &tls.Config{Certificates: []tls.Certificate{*cert}}
	}
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	b.caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
	if err := os.WriteFile(b.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

// selfSigned makes a certificate for ip signed by its own key.
func selfSigned(t *testing.T, ip string) *tls.Certificate {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (b *httpsBackend) backend() config.Backend {
	_, port, _ := net.SplitHostPort(b.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: "127.0.0.1", Port: p, Weight: config.DefaultWeight}
}

func httpsRoute(id string, bt config.BackendTLS, bs ...config.Backend) config.Entrypoint {
	e := ep(id, bs...)
	e.Scheme, e.BackendTLS = config.SchemeHTTPS, bt
	return e
}

func TestHTTPSBackendVerifiedAgainstTheRouteCA(t *testing.T) {
	h := newHarness(t, Options{})
	b := newHTTPSBackend(t)
	h.set(config.SourceDocker,
		httpsRoute("web", config.BackendTLS{CA: b.caFile}, b.backend()),
		httpsRoute("named", config.BackendTLS{CA: b.caFile, ServerName: "example.com"}, b.backend()))
	for _, host := range []string{"web.test", "named.test", "web.test"} {
		if code, body, _ := h.get(host, "/"); code != 200 || !strings.HasPrefix(body, "ok over") {
			t.Fatalf("%s: %d %q, want the backend's answer over TLS", host, code, body)
		}
	}
}

// A certificate for another name is the backend's failure: 502
// backend-tls, logged with the reason, counted by the breaker.
func TestHTTPSBackendWrongNameIsABackendFailure(t *testing.T) {
	h := newHarness(t, Options{})
	b := newHTTPSBackend(t)
	p := breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 10 * time.Second}
	h.set(config.SourceDocker, withBreaker(httpsRoute("web", config.BackendTLS{CA: b.caFile, ServerName: "portainer.internal"}, b.backend()), p))
	for i := range 2 {
		code, _, resp := h.get("web.test", "/")
		if code != http.StatusBadGateway || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendTLS {
			t.Fatalf("request %d: %d %q, want 502 backend-tls", i, code, resp.Header.Get(HeaderDiagnostic))
		}
	}
	if !strings.Contains(h.logs.String(), `"event":"backend_tls_failed"`) || !strings.Contains(h.logs.String(), `"reason":"name mismatch"`) {
		t.Errorf("log %s: want a backend_tls_failed line naming the reason", h.logs.String())
	}
	if s := breakerState(t, h, "web"); s != "open" {
		t.Fatalf("breaker %s after two failed handshakes, want open", s)
	}
	if b.hits.Load() != 0 {
		t.Fatalf("the backend served %d requests, want none", b.hits.Load())
	}
}

// Without the CA the backend's certificate is from an unknown authority;
// a second, good backend then answers (the request was never sent).
func TestHTTPSBackendUntrustedTriesTheNextBackend(t *testing.T) {
	h := newHarness(t, Options{})
	good, untrusted := newHTTPSBackend(t), newHTTPSBackendWith(t, selfSigned(t, "127.0.0.1"))
	h.set(config.SourceDocker, httpsRoute("web", config.BackendTLS{CA: good.caFile}, untrusted.backend(), good.backend()))
	for i := range 4 {
		if code, body, _ := h.get("web.test", "/"); code != 200 || !strings.HasPrefix(body, "ok over") {
			t.Fatalf("request %d: %d %q, want the good backend's answer", i, code, body)
		}
	}
	if !strings.Contains(h.logs.String(), `"reason":"unknown authority"`) {
		t.Errorf("log %s: want the unknown authority named", h.logs.String())
	}
}

// A CA file that cannot be read never becomes the system roots or no
// verification: the route answers 502 backend-tls-misconfigured and no
// request reaches a backend.
func TestHTTPSBackendUnreadableCAFailsClosed(t *testing.T) {
	h := newHarness(t, Options{})
	b := newHTTPSBackend(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	h.set(config.SourceDocker,
		httpsRoute("web", config.BackendTLS{CA: missing, InsecureSkipVerify: true}, b.backend()),
		httpsRoute("bad", config.BackendTLS{ClientCert: config.InvalidBackendTLS}, b.backend()))
	for _, host := range []string{"web.test", "bad.test"} {
		code, _, resp := h.get(host, "/")
		if code != http.StatusBadGateway || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendTLSMisconfigured {
			t.Fatalf("%s: %d %q, want 502 backend-tls-misconfigured", host, code, resp.Header.Get(HeaderDiagnostic))
		}
	}
	if b.hits.Load() != 0 {
		t.Fatalf("the backend served %d requests, want none", b.hits.Load())
	}
	found := false
	for _, d := range h.r.Diagnostics() {
		if d.Code == "W005" && strings.Contains(d.Message, missing) {
			found = true
		}
	}
	if !found {
		t.Fatalf("diagnostics %v: want a W005 naming %s", h.r.Diagnostics(), missing)
	}
}

// A backend whose handshake keeps failing is ejected by passive health:
// the failure is the backend's.
func TestHTTPSBackendFailedHandshakesEject(t *testing.T) {
	h := newHarness(t, Options{})
	good, untrusted := newHTTPSBackend(t), newHTTPSBackendWith(t, selfSigned(t, "127.0.0.1"))
	e := httpsRoute("web", config.BackendTLS{CA: good.caFile}, untrusted.backend(), good.backend())
	e.PassiveHealth = config.PassiveHealth{ConsecutiveFailures: 2, EjectTime: time.Minute, MaxEjectTime: time.Minute, MaxEjectedShare: 0.5}
	h.set(config.SourceDocker, e)
	for i := range 6 {
		if code, _, _ := h.get("web.test", "/"); code != 200 {
			t.Fatalf("request %d: %d, want the good backend's answer", i, code)
		}
	}
	ejected := false
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(line, `"event":"backend_ejected"`) && strings.Contains(line, `"backend":"`+untrusted.srv.Listener.Addr().String()+`"`) {
			ejected = true
		}
	}
	if !ejected {
		t.Fatalf("log %s: want the untrusted backend ejected", h.logs.String())
	}
}
