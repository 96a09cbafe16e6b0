package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// pebbleVersion is the Pebble the ACME test runs (.ci/setup.d/pebble.sh
// builds the same one).
const pebbleVersion = "v2.10.3"

// pebbleDir returns a directory with pebble, pebble-challtestsrv and
// Pebble's test certificates (certs/): $LEVEE_TEST_PEBBLE_DIR (CI sets
// it), else one built here from the Go module proxy and kept in the
// temporary directory. Without either the test skips, or fails under CI.
func pebbleDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test needs Pebble")
	}
	if d := os.Getenv("LEVEE_TEST_PEBBLE_DIR"); d != "" {
		return d
	}
	d := filepath.Join(os.TempDir(), "levee-pebble-"+pebbleVersion)
	err := buildPebble(d)
	if err == nil {
		return d
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("Pebble is needed under CI: %v (.ci/setup.d/pebble.sh sets LEVEE_TEST_PEBBLE_DIR)", err)
	}
	t.Skipf("Pebble not available (set LEVEE_TEST_PEBBLE_DIR or allow the Go module proxy): %v", err)
	return ""
}

// buildPebble installs Pebble into dir unless it is there already.
func buildPebble(dir string) error {
	if _, err := os.Stat(filepath.Join(dir, "certs", "pebble.minica.pem")); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), "GOFLAGS=", "GOBIN="+dir)
	install := exec.Command("go", "install", "github.com/letsencrypt/pebble/v2/cmd/pebble@"+pebbleVersion,
		"github.com/letsencrypt/pebble/v2/cmd/pebble-challtestsrv@"+pebbleVersion)
	install.Dir, install.Env = dir, env
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("go install pebble: %v\n%s", err, out)
	}
	download := exec.Command("go", "mod", "download", "-json", "github.com/letsencrypt/pebble/v2@"+pebbleVersion)
	download.Dir, download.Env = dir, env
	out, err := download.Output()
	if err != nil {
		return fmt.Errorf("go mod download pebble: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download pebble: no directory in %s", out)
	}
	return exec.Command("cp", "-r", filepath.Join(mod.Dir, "test", "certs"), filepath.Join(dir, "certs")).Run()
}

// pebble is a running Pebble CA with its challenge test DNS server, which
// answers 127.0.0.1 for every name.
type pebble struct {
	dir        string
	dirURL     string // the ACME directory
	management string // host:port of the management interface
	cmd        *exec.Cmd
	minica     *x509.CertPool
}

// startPebble runs Pebble whose validation authority connects to
// httpPort (HTTP-01) and tlsPort (TLS-ALPN-01) on 127.0.0.1. validity, if
// not 0, is the lifetime of the certificates it issues.
func startPebble(t *testing.T, dir string, httpPort, tlsPort int, validity time.Duration) *pebble {
	t.Helper()
	dnsPort, challMgmt := freePort(t), freePort(t)
	dns := exec.Command(filepath.Join(dir, "pebble-challtestsrv"), "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
		"-dnsserver", fmt.Sprintf("127.0.0.1:%d", dnsPort), "-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", "",
		"-management", fmt.Sprintf("127.0.0.1:%d", challMgmt))
	startProcess(t, dns)
	return startPebbleWithDNS(t, dir, httpPort, tlsPort, validity, fmt.Sprintf("127.0.0.1:%d", dnsPort))
}

// startPebbleWithDNS runs Pebble whose validation authority resolves
// names (and DNS-01 TXT records) through dnsServer (host:port).
func startPebbleWithDNS(t *testing.T, dir string, httpPort, tlsPort int, validity time.Duration, dnsServer string) *pebble {
	t.Helper()
	acmePort, mgmtPort := freePort(t), freePort(t)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           fmt.Sprintf("127.0.0.1:%d", acmePort),
		"managementListenAddress": fmt.Sprintf("127.0.0.1:%d", mgmtPort),
		"certificate":             filepath.Join(dir, "certs", "localhost", "cert.pem"),
		"privateKey":              filepath.Join(dir, "certs", "localhost", "key.pem"),
		"httpPort":                httpPort,
		"tlsPort":                 tlsPort,
		"ocspResponderURL":        "",
		"retryAfter":              map[string]int{"authz": 1, "order": 1},
	}}
	if validity > 0 {
		cfg["pebble"].(map[string]any)["profiles"] = map[string]any{
			"default": map[string]any{"description": "short-lived, for the renewal test", "validityPeriod": int(validity / time.Second)},
		}
	}
	cfgFile := filepath.Join(t.TempDir(), "pebble.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "pebble"), "-config", cfgFile, "-dnsserver", dnsServer)
	// No random sleeps in validation, no nonce rejections, a fresh
	// validation for every order.
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0")
	startProcess(t, cmd)
	p := &pebble{dir: dir, dirURL: fmt.Sprintf("https://127.0.0.1:%d/dir", acmePort), management: fmt.Sprintf("127.0.0.1:%d", mgmtPort), cmd: cmd}
	pemBytes, err := os.ReadFile(p.minicaFile())
	if err != nil {
		t.Fatal(err)
	}
	p.minica = x509.NewCertPool()
	p.minica.AppendCertsFromPEM(pemBytes)
	waitFor(t, "Pebble's directory", func() error {
		_, err := p.get("https://" + strings.TrimPrefix(strings.TrimSuffix(p.dirURL, "/dir"), "https://") + "/dir")
		return err
	})
	return p
}

// minicaFile signs Pebble's own HTTPS certificates (--acme-ca-root).
func (p *pebble) minicaFile() string { return filepath.Join(p.dir, "certs", "pebble.minica.pem") }

func (p *pebble) get(url string) ([]byte, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: p.minica}}}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return b, err
}

// roots is the pool of the root Pebble issues certificates under (it is
// generated at Pebble's start: /roots/0 on the management interface).
func (p *pebble) roots(t *testing.T) *x509.CertPool {
	t.Helper()
	b, err := p.get("https://" + p.management + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("no PEM root from Pebble: %s", b)
	}
	return pool
}

// stop kills Pebble: from now on the CA refuses connections.
func (p *pebble) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// startProcess starts cmd and kills it when the test ends.
func startProcess(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	out := &syncOutput{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", filepath.Base(cmd.Path), out.String())
		}
	})
}

// syncOutput collects a process's output.
type syncOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *syncOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *syncOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// The compose demo's CA (the Makefile's PEBBLE_VERSION) and CI's
// (.ci/setup.d/pebble.sh) are the Pebble these tests are written against.
func TestPebbleVersionIsOneEverywhere(t *testing.T) {
	root := moduleRoot(t)
	for file, pattern := range map[string]string{
		"Makefile":              `(?m)^PEBBLE_VERSION \?= (\S+)$`,
		".ci/setup.d/pebble.sh": `(?m)^pebble_version=(\S+)$`,
	} {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(pattern).FindSubmatch(b)
		if m == nil || string(m[1]) != pebbleVersion {
			t.Errorf("%s: Pebble version %q, want %s (e2e/pebble_test.go)", file, m, pebbleVersion)
		}
	}
}
