package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/leveetest"
)

// DNS-01 end to end, through the binary: BIND's named serves the zone
// example.test and takes TSIG-signed updates (RFC 2136); Pebble checks
// the challenge's TXT record there. A route for *.example.test gets one
// wildcard certificate, served by SNI to its sub-domains. With a key the
// server rejects (a wrong secret), or one it knows but does not let write,
// the order fails as W044 naming dns-01 and the refusal, while a plain
// route keeps serving and the wildcard host gets the default certificate.
func TestACMEDNS01WithBind(t *testing.T) {
	named := namedBinary(t)
	pebbleBin := pebbleDir(t)
	ns := startNamed(t, named, "example.test")
	// Pebble's HTTP-01 and TLS-ALPN-01 ports lead nowhere: only DNS-01
	// can succeed.
	ca := startPebbleWithDNS(t, pebbleBin, freePort(t), freePort(t), 0, ns.addr)
	roots := ca.roots(t)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "backend %s", r.Host)
	}))
	t.Cleanup(backend.Close)
	bport := portOf(t, backend.URL)
	wildRoute := `{"name":"wild","backends":[{"address":"127.0.0.1","port":` + bport + `}],"config":{"hostnames":["*.example.test"],"tls":{"enabled":true}}}`

	t.Run("wildcard certificate", func(t *testing.T) {
		p := startDNSLevee(t, ca, ns, keyClause(ns.keyName, ns.keySecret), "--acme-challenges", "tls-alpn-01,dns-01")
		secure := p.listenerAddr("websecure")
		createEntrypoint(t, p, wildRoute)
		var leaf *x509.Certificate
		waitForWithin(t, 60*time.Second, "a wildcard certificate from Pebble for a.example.test", func() error {
			l, err := servedLeaf(secure, "a.example.test", roots)
			leaf = l
			return err
		})
		if !slices.Contains(leaf.DNSNames, "*.example.test") {
			t.Errorf("certificate names %v, want *.example.test", leaf.DNSNames)
		}
		// The same certificate for another sub-domain, and the route
		// behind it answers.
		other, err := servedLeaf(secure, "b.example.test", roots)
		if err != nil || !other.Equal(leaf) {
			t.Errorf("b.example.test: %v (same certificate: %v)", err, err == nil && other.Equal(leaf))
		}
		resp, err := httpsClient(secure, roots).Get("https://b.example.test/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "backend b.example.test" {
			t.Errorf("https://b.example.test/x: %d %q", resp.StatusCode, body)
		}
		if got := certificateSource(t, p, "*.example.test"); got != "acme" {
			t.Errorf("GET /certificates: *.example.test is %q, want acme", got)
		}
		if d := apiText(t, p, "/diagnostics?code=W045"); strings.Contains(d, "example.test") {
			t.Errorf("W045 with DNS-01 on: %s", d)
		}
	})

	for _, tc := range []struct {
		name, clause, refusal string
	}{
		{"wrong key", keyClause(ns.keyName, newTSIGSecret(t)), "dns: bad authentication"},
		{"key without the right", keyClause(ns.readOnlyKeyName, ns.readOnlyKeySecret), `dns response error code "REFUSED"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refusedUpdate(t, ca, ns, tc.clause, tc.refusal, wildRoute, bport)
		})
	}
}

// refusedUpdate: the server refuses the update signed with clause; the
// order fails as W044 (log, API, metric) naming dns-01, rfc2136 and refusal,
// a plain route serves and the wildcard host gets the default
// certificate.
func refusedUpdate(t *testing.T, ca *pebble, ns *namedServer, clause, refusal, wildRoute, bport string) {
	t.Helper()
	p := startDNSLevee(t, ca, ns, clause)
	secure := p.listenerAddr("websecure")
	createEntrypoint(t, p, wildRoute)
	createEntrypoint(t, p, `{"name":"plain","backends":[{"address":"127.0.0.1","port":`+bport+`}],"config":{"hostnames":["plain.test"]}}`)
	line := p.waitLog(60*time.Second, func(m map[string]any) bool {
		return m["code"] == "W044" && m["host"] == "*.example.test"
	})
	if c := fmt.Sprint(line["challenge"]); !strings.HasPrefix(c, "dns-01") || !strings.Contains(c, "rfc2136") {
		t.Errorf("W044 challenge %q, want dns-01 through rfc2136", c)
	}
	if e := fmt.Sprint(line["error"]); !strings.Contains(e, "adding temporary record") || !strings.Contains(e, refusal) {
		t.Errorf("W044 error %q does not give the server's refusal %q", e, refusal)
	}
	waitFor(t, "W044 in the API", func() error {
		if d := apiText(t, p, "/diagnostics?code=W044"); !strings.Contains(d, "*.example.test") || !strings.Contains(d, "_acme-challenge.example.test") {
			return fmt.Errorf("no W044 for *.example.test with the DNS hint: %s", d)
		}
		return nil
	})
	if v, ok := metricValue(metrics(t, p), "levee_tls_acme_failures_total", `host="*.example.test"`); !ok || v < 1 {
		t.Errorf("levee_tls_acme_failures_total{host=\"*.example.test\"} = %v (present %v), want at least 1", v, ok)
	}
	if status, _, body := get(t, p.proxyURL()+"/", "plain.test"); status != 200 || body != "backend plain.test" {
		t.Errorf("plain route: %d %q", status, body)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", secure, &tls.Config{ServerName: "a.example.test", InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "Levee default certificate" {
		t.Errorf("a.example.test served %q, want the default certificate", cn)
	}
}

// startDNSLevee runs the binary with ACME against ca through DNS-01 on
// ns's zone, the TSIG key given as a key file holding clause.
func startDNSLevee(t *testing.T, ca *pebble, ns *namedServer, clause string, args ...string) *leveeProc {
	t.Helper()
	keyFile := filepath.Join(t.TempDir(), "tsig.key")
	if err := os.WriteFile(keyFile, []byte(clause), 0o600); err != nil {
		t.Fatal(err)
	}
	p := leveetest.Start(t, leveeBinary, leveetest.Options{
		Args: append([]string{"--log-level", "debug", "--shutdown-timeout", "5s", "--docker=false",
			"--listen", "websecure=127.0.0.1:0,tls",
			"--acme-ca", ca.dirURL, "--acme-ca-root", ca.minicaFile(), "--acme-email", "ops@levee.test",
			"--cert-dir", t.TempDir(), "--acme-dns-provider", "rfc2136", "--acme-dns-resolvers", ns.addr}, args...),
		Env: []string{"LEVEE_STATE_FILE=" + filepath.Join(t.TempDir(), "state.json"),
			"LEVEE_RFC2136_SERVER=" + ns.addr, "LEVEE_RFC2136_KEY_FILE=" + keyFile},
		InheritLeveeEnv: true,
	})
	return &leveeProc{Proc: p, t: t}
}

// servedLeaf is the certificate addr serves for name, verified against
// roots for that name by the TLS handshake itself.
func servedLeaf(addr, name string, roots *x509.CertPool) (*x509.Certificate, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: name, RootCAs: roots})
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}
