package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// ACME end to end: a labelled container with tls=true becomes reachable
// over HTTPS with a certificate Pebble issued, through each challenge in
// turn (Pebble's validation authority is pointed at a dead port for the
// other one, so only the challenge under test can succeed). Then Pebble
// stops: a new TLS host gets W044 in the log and the API, is served with
// the default certificate, and the first host keeps its certificate.
func TestACMEWithPebble(t *testing.T) {
	dir := pebbleDir(t)
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	for _, challenge := range []string{"http-01", "tls-alpn-01"} {
		t.Run(challenge, func(t *testing.T) {
			webPort, securePort, deadPort := freePort(t), freePort(t), freePort(t)
			httpPort, tlsPort := webPort, deadPort
			if challenge == "tls-alpn-01" {
				httpPort, tlsPort = deadPort, securePort
			}
			ca := startPebble(t, dir, httpPort, tlsPort, 0)
			certDir := t.TempDir()
			p := startLevee(t, "--http-listen", "127.0.0.1:"+strconv.Itoa(webPort),
				"--listen", "websecure=127.0.0.1:"+strconv.Itoa(securePort)+",tls",
				"--acme-ca", ca.dirURL, "--acme-ca-root", ca.minicaFile(), "--acme-email", "ops@levee.test",
				"--cert-dir", certDir)
			secure := p.listenerAddr("websecure")
			host := strings.ReplaceAll(challenge, "-", "") + "-" + dockertest.RunID(t) + ".test"
			dockertest.Run(t, cli, echoSpec(image, network, "acme", host, map[string]string{"levee.http.app.tls": "true"}))

			roots := ca.roots(t)
			var leaf *x509.Certificate
			waitForWithin(t, 60*time.Second, "a Pebble certificate for "+host, func() error {
				l, name, err := httpsGet(secure, host, roots)
				if err != nil {
					return err
				}
				if name != "acme" {
					return fmt.Errorf("answered by %q", name)
				}
				leaf = l
				return nil
			})
			if !strings.Contains(leaf.Issuer.CommonName, "Pebble") {
				t.Errorf("issuer %q", leaf.Issuer.CommonName)
			}
			if got := certificateSource(t, p, host); got != "acme" {
				t.Errorf("GET /certificates: %s is %q, want acme", host, got)
			}
			// Plain HTTP is redirected (the challenge path aside).
			req, _ := http.NewRequest("GET", p.proxyURL()+"/x?y=1", nil)
			req.Host = host
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusPermanentRedirect {
				t.Errorf("plain HTTP: %d, want 308", resp.StatusCode)
			}
			if challenge == "http-01" {
				refusingCA(t, p, ca, cli, image, network, secure, host, roots)
				return
			}
			// A second Levee sharing --cert-dir serves the stored
			// certificate without ordering (the CA is gone).
			ca.stop()
			p2 := startLevee(t, "--listen", "websecure=127.0.0.1:0,tls", "--acme-ca", ca.dirURL,
				"--acme-ca-root", ca.minicaFile(), "--acme-email", "ops@levee.test", "--cert-dir", certDir)
			secure2 := p2.listenerAddr("websecure")
			waitFor(t, "the stored certificate from the second Levee", func() error {
				l, _, err := httpsGet(secure2, host, roots)
				if err != nil {
					return err
				}
				if !l.Equal(leaf) {
					return fmt.Errorf("a different certificate (serial %s)", l.SerialNumber)
				}
				return nil
			})
		})
	}
}

// refusingCA stops Pebble and adds a TLS host: W044 names it, Levee keeps
// running, the new host is served with the default certificate and the
// old one keeps its Pebble certificate.
func refusingCA(t *testing.T, p *leveeProc, ca *pebble, cli *client.Client, image, network, secure, host string, roots *x509.CertPool) {
	t.Helper()
	ca.stop()
	host2 := "refused-" + dockertest.RunID(t) + ".test"
	dockertest.Run(t, cli, echoSpec(image, network, "refused", host2, map[string]string{"levee.http.app.tls": "true"}))
	line := p.waitLog(60*time.Second, func(m map[string]any) bool {
		return m["code"] == "W044" && m["host"] == host2
	})
	if e := fmt.Sprint(line["error"]); !strings.Contains(e, "connection refused") {
		t.Errorf("W044 error %q does not give the reason", e)
	}
	if line["next_try"] == nil {
		t.Errorf("W044 without the next try: %v", line)
	}
	waitFor(t, "W044 in the API", func() error {
		resp, err := http.Get(p.apiURL() + "/diagnostics?code=W044")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), host2) {
			return fmt.Errorf("no W044 for %s: %s", host2, b)
		}
		return nil
	})
	// The new host answers, with the default certificate.
	waitFor(t, host2+" over HTTPS with the default certificate", func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", secure, &tls.Config{ServerName: host2, InsecureSkipVerify: true})
		if err != nil {
			return err
		}
		defer conn.Close()
		if cn := conn.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "Levee default certificate" {
			return fmt.Errorf("served %q", cn)
		}
		return nil
	})
	if _, name, err := httpsGet(secure, host, roots); err != nil || name != "acme" {
		t.Errorf("%s after the CA stopped: %q %v", host, name, err)
	}
}

// httpsGet asks host over HTTPS (HTTP/2) at addr, trusting roots, and
// returns the certificate served and the echo replica's name.
func httpsGet(addr, host string, roots *x509.CertPool) (*x509.Certificate, string, error) {
	c := httpsClient(addr, roots)
	resp, err := c.Get("https://" + host + "/")
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, "", fmt.Errorf("status %d", resp.StatusCode)
	}
	var reply struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		return nil, "", err
	}
	return resp.TLS.PeerCertificates[0], reply.Name, nil
}

// certificateSource is the source GET /certificates gives for host.
func certificateSource(t *testing.T, p *leveeProc, host string) string {
	t.Helper()
	resp, err := http.Get(p.apiURL() + "/certificates")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Certificates []struct{ Host, Source string } `json:"certificates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Certificates {
		if c.Host == host {
			return c.Source
		}
	}
	return ""
}

// Renewal: Pebble issues certificates valid for a minute; Levee, checking
// every second, renews each once a third of its lifetime is left and
// serves the new one without a restart.
func TestACMERenewal(t *testing.T) {
	dir := pebbleDir(t)
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	webPort, securePort := freePort(t), freePort(t)
	ca := startPebble(t, dir, webPort, securePort, time.Minute)
	p := startLevee(t, "--http-listen", "127.0.0.1:"+strconv.Itoa(webPort),
		"--listen", "websecure=127.0.0.1:"+strconv.Itoa(securePort)+",tls",
		"--acme-ca", ca.dirURL, "--acme-ca-root", ca.minicaFile(), "--acme-email", "ops@levee.test",
		"--cert-dir", t.TempDir(), "--acme-renew-interval", "1s")
	secure := p.listenerAddr("websecure")
	host := "renew-" + dockertest.RunID(t) + ".test"
	dockertest.Run(t, cli, echoSpec(image, network, "renew", host, map[string]string{"levee.http.app.tls": "true"}))
	roots := ca.roots(t)
	var first *x509.Certificate
	waitForWithin(t, 60*time.Second, "a first certificate", func() error {
		l, _, err := httpsGet(secure, host, roots)
		first = l
		return err
	})
	if life := first.NotAfter.Sub(first.NotBefore); life > 2*time.Minute {
		t.Fatalf("Pebble issued a certificate valid %s: the short-lived profile is not in force", life)
	}
	waitForWithin(t, 90*time.Second, "the renewed certificate", func() error {
		l, _, err := httpsGet(secure, host, roots)
		if err != nil {
			return err
		}
		if l.Equal(first) {
			return fmt.Errorf("still the first certificate (not after %s)", first.NotAfter.Format(time.TimeOnly))
		}
		return nil
	})
	p.waitLog(10*time.Second, func(m map[string]any) bool {
		return m["message"] == "ACME: certificate obtained" && m["renewal"] == true && m["host"] == host
	})
}
