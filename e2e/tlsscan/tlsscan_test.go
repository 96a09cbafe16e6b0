package tlsscan

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/leveetest"
)

// knownH2specFailures are the h2spec cases Go's HTTP/2 server
// (golang.org/x/net/http2, which both of Levee's servers use for h2)
// fails, with the reason docs/tls.md gives.
var knownH2specFailures = map[string]string{
	"http2/4.2/3":     "a HEADERS frame over SETTINGS_MAX_FRAME_SIZE is answered instead of FRAME_SIZE_ERROR",
	"http2/6.5.3/1":   "two SETTINGS_INITIAL_WINDOW_SIZE values in one frame close the connection",
	"http2/8.1.2.2/1": "a request with a connection-specific header is answered 400 by Go's server, not reset",
	"http2/8.1.2.2/2": "a request with TE other than trailers is answered 400 by Go's server, not reset",
}

// scanTimeout bounds one scanner run; testssl.sh takes about 30 s here.
const scanTimeout = 5 * time.Minute

func TestTLSScanners(t *testing.T) {
	testssl := tool(t, "LEVEE_TEST_TESTSSL", "testssl", "testssl.sh")
	h2spec := tool(t, "LEVEE_TEST_H2SPEC", "h2spec")
	bin, remove, err := leveetest.Build(raceEnabled)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)
	for _, server := range []string{"levee", "stdlib"} {
		t.Run(server, func(t *testing.T) {
			t.Parallel()
			addr := tlsListener(t, bin, server)
			t.Run("h2spec", func(t *testing.T) { checkH2spec(t, h2spec, addr) })
			t.Run("testssl", func(t *testing.T) { checkTestssl(t, testssl, addr) })
		})
	}
}

// tool is the scanner named by env, else the first of names in PATH.
func tool(t *testing.T, env string, names ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short: this test needs %s", names[0])
	}
	if p := os.Getenv(env); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("%s not found: set %s or put it in PATH (.ci/setup.d/tlsscan.sh installs it)", names[0], env)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// tlsListener runs Levee with the given HTTP server and a TLS listener
// (Levee's default certificate) serving a route for localhost to a
// backend, and returns the listener's address once the route answers
// over HTTP/2 and HTTP/1.1.
func tlsListener(t *testing.T, bin, server string) string {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "backend saw %s %s\n", r.Method, r.URL.RequestURI())
	}))
	t.Cleanup(backend.Close)
	p := leveetest.Start(t, bin, leveetest.Options{Args: []string{"--docker=false",
		"--http-server", server, "--listen", "websecure=127.0.0.1:0,tls",
		"--state-file", filepath.Join(t.TempDir(), "state.json")}})
	line, err := p.WaitLog(10*time.Second, func(m map[string]any) bool {
		return m["message"] == "listening" && m["listener"] == "proxy" && m["name"] == "websecure"
	})
	if err != nil {
		t.Fatalf("the TLS listener: %v", err)
	}
	addr := fmt.Sprint(line["addr"])

	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	payload := fmt.Sprintf(`{"name":"scan","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["localhost"],"tls":true}}`, host, port)
	resp, err := http.Post("http://"+p.APIAddr+"/entrypoints", "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /entrypoints: %d %s", resp.StatusCode, body)
	}
	for _, h2 := range []bool{true, false} {
		c := client(addr, h2)
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := get(c, h2)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the route over TLS (h2 %v): %v", h2, err)
			}
			time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
		}
	}
	return addr
}

// client reaches addr over TLS whatever the URL, trusting anything (the
// default certificate is self-signed), over HTTP/2 or HTTP/1.1 only.
func client(addr string, h2 bool) *http.Client {
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}
	if h2 {
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func get(c *http.Client, h2 bool) error {
	resp, err := c.Get("https://localhost/probe")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	proto := 1
	if h2 {
		proto = 2
	}
	if resp.StatusCode != 200 || resp.ProtoMajor != proto || !bytes.Contains(b, []byte("backend saw GET /probe")) {
		return fmt.Errorf("%d %s %q", resp.StatusCode, resp.Proto, b)
	}
	return nil
}

// junit is the part of h2spec's JUnit report (-j) the test reads: each
// suite is one section (package "http2/6.5.3"), its cases numbered from 1
// in order, as h2spec names them on its command line ("http2/6.5.3/1").
type junit struct {
	Suites []struct {
		Package string `xml:"package,attr"`
		Cases   []struct {
			Name    string    `xml:"classname,attr"`
			Error   *struct{} `xml:"error"`
			Failure *struct{} `xml:"failure"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func checkH2spec(t *testing.T, h2spec, addr string) {
	_, port, _ := net.SplitHostPort(addr)
	report := filepath.Join(t.TempDir(), "h2spec.xml")
	ctx, cancel := context.WithTimeout(context.Background(), scanTimeout)
	defer cancel()
	// -t TLS, -k do not verify the certificate; -o the per-case timeout.
	// Its requests name localhost, so they reach the route and the backend
	// (a 404 for an unknown host would be answered before h2spec's DATA
	// frames arrive, and the cases about malformed bodies would race it).
	out, err := exec.CommandContext(ctx, h2spec, "-t", "-k", "-h", "localhost", "-p", port, "-o", "5", "-j", report).CombinedOutput()
	raw, rerr := os.ReadFile(report)
	if rerr != nil {
		t.Fatalf("h2spec wrote no report (%v): %v\n%s", err, rerr, out)
	}
	var r junit
	if err := xml.Unmarshal(raw, &r); err != nil {
		t.Fatalf("h2spec report: %v", err)
	}
	var failed []string
	total := 0
	for _, s := range r.Suites {
		for i, c := range s.Cases {
			total++
			if c.Skipped != nil {
				t.Errorf("%s/%d (%s) skipped", s.Package, i+1, c.Name)
			}
			if c.Error != nil || c.Failure != nil {
				failed = append(failed, fmt.Sprintf("%s/%d", s.Package, i+1))
			}
		}
	}
	// h2spec v2.2.1 has 145 cases (.ci/setup.d/tlsscan.sh builds it).
	if total < 145 {
		t.Errorf("h2spec ran %d cases, want at least 145:\n%s", total, out)
	}
	for _, id := range failed {
		if _, known := knownH2specFailures[id]; !known {
			t.Errorf("h2spec %s failed, and Go's HTTP/2 server is not known to fail it", id)
		}
	}
	for id, why := range knownH2specFailures {
		if !slices.Contains(failed, id) {
			t.Errorf("h2spec %s passes now (was: %s): update knownH2specFailures and docs/tls.md", id, why)
		}
	}
	if t.Failed() {
		t.Logf("h2spec output:\n%s", out)
	} else {
		t.Logf("h2spec: %d of %d cases pass; the %d known failures: %v", total-len(failed), total, len(failed), failed)
	}
}

// finding is one entry of testssl.sh's --jsonfile report.
type finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Finding  string `json:"finding"`
}

// weakSeverities are testssl.sh's ratings of a problem, lowest first
// (OK and INFO are not problems; DEBUG is not printed).
var weakSeverities = []string{"LOW", "MEDIUM", "HIGH", "CRITICAL", "WARN", "FATAL"}

func checkTestssl(t *testing.T, testssl, addr string) {
	report := filepath.Join(t.TempDir(), "testssl.json")
	ctx, cancel := context.WithTimeout(context.Background(), scanTimeout)
	defer cancel()
	// -p protocols, -s cipher categories, -f forward secrecy, -P the
	// server's preferences, -U vulnerabilities. --nodns min: no reverse
	// look-ups, --ip one: the address given, nothing else on the network.
	cmd := exec.CommandContext(ctx, testssl, "--quiet", "--color", "0", "--warnings", "off", "--ip", "one", "--nodns", "min",
		"-p", "-s", "-f", "-P", "-U", "--jsonfile", report, addr)
	out, err := cmd.CombinedOutput()
	raw, rerr := os.ReadFile(report)
	if rerr != nil {
		t.Fatalf("testssl.sh wrote no report (%v): %v\n%s", err, rerr, out)
	}
	var findings []finding
	if err := json.Unmarshal(raw, &findings); err != nil {
		// testssl.sh writes its report as it goes and leaves it cut short
		// when it gives up (a connect or openssl timeout): its own output
		// says why.
		t.Fatalf("testssl.sh report: %v (testssl.sh exit: %v)\n%s\ntestssl.sh output:\n%s", err, cmd.ProcessState, raw, out)
	}
	byID := map[string]finding{}
	for _, f := range findings {
		byID[f.ID] = f
		if slices.Contains(weakSeverities, f.Severity) {
			t.Errorf("testssl.sh %s: %s (%s)", f.ID, f.Finding, f.Severity)
		}
	}
	want := map[string]string{
		// docs/tls.md: TLS 1.2 and 1.3 only.
		"SSLv2": "not offered", "SSLv3": "not offered", "TLS1": "not offered", "TLS1_1": "not offered",
		"TLS1_2": "offered", "TLS1_3": "offered",
		// No weak cipher category; CBC suites are the AVERAGE ones.
		"cipherlist_NULL": "not offered", "cipherlist_aNULL": "not offered", "cipherlist_EXPORT": "not offered",
		"cipherlist_LOW": "not offered", "cipherlist_3DES_IDEA": "not offered", "cipherlist_AVERAGE": "not offered",
		"cipherlist_STRONG": "offered",
		// Every suite forward secret; ALPN offers h2.
		"PFS":        "offered",
		"ALPN_HTTP2": "h2",
	}
	for id, prefix := range want {
		f, ok := byID[id]
		if !ok {
			t.Errorf("testssl.sh reported no %s", id)
			continue
		}
		if !strings.HasPrefix(f.Finding, prefix) {
			t.Errorf("testssl.sh %s: %q, want %q", id, f.Finding, prefix)
		}
	}
	// The TLS 1.2 suites are exactly the three of docs/tls.md, in order.
	if got, wantOrder := strings.Fields(byID["cipherorder_TLSv1_2"].Finding),
		[]string{"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"}; !slices.Equal(got, wantOrder) {
		t.Errorf("TLS 1.2 suites %v, want %v", got, wantOrder)
	}
	if t.Failed() {
		t.Logf("testssl.sh output (exit %v):\n%s", err, out)
	}
}
