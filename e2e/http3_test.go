package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// h3Client speaks HTTP/3 to addr (UDP) whatever the URL's host, trusting
// ca.
func h3Client(t *testing.T, addr string, ca *e2eCA) *http.Client {
	t.Helper()
	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.pool},
		QUICConfig:      &quic.Config{HandshakeIdleTimeout: 3 * time.Second},
		Dial: func(ctx context.Context, _ string, cfg *tls.Config, qcfg *quic.Config) (*quic.Conn, error) {
			return quic.DialAddr(ctx, addr, cfg, qcfg)
		},
	}
	t.Cleanup(func() { _ = tr.Close() })
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// HTTP/3 through the binary: a TLS listener with h3 advertises it by
// Alt-Svc on its HTTP/2 answers, serves the same routes over QUIC with
// the same certificates (a GET and a POST reach the backend, which sees
// the client's address), applies the routes' policies (an IP allow-list
// denies) and breakers (an open one answers 503 with Retry-After), logs the protocol as HTTP/3.0, and on SIGTERM lets a request
// in progress finish before the process exits.
func TestHTTP3ThroughTheBinary(t *testing.T) {
	ca := newE2ECA(t)
	dir := t.TempDir()
	ca.issue(t, dir, "app", "app.test", "fenced.test", "down.test")
	release := make(chan struct{})
	slowStarted := make(chan struct{}, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "down.test" {
			http.Error(w, "failing", http.StatusInternalServerError)
			return
		}
		if r.URL.Path == "/slow" {
			slowStarted <- struct{}{}
			<-release
		}
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s xff=%s %s", r.Method, r.Host, r.URL.RequestURI(), r.Header.Get("X-Forwarded-For"), body)
	}))
	defer backend.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()

	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls,h3", "--tls-cert-dir", dir, "--shutdown-timeout", "15s")
	secure := p.listenerAddr("websecure")
	_, port, _ := net.SplitHostPort(secure)
	p.waitLog(10*time.Second, func(m map[string]any) bool {
		return m["message"] == "listening" && m["name"] == "websecure" && m["protocol"] == "HTTP/3" && m["addr"] == "udp "+secure
	})

	bhost, bport, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"app","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["app.test"],"tls":true}}`, bhost, bport))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"down","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["down.test"],"tls":true,`+
		`"circuit_breaker":{"consecutive_failures":2,"min_requests":100,"cooldown":"1m"}}}`, bhost, bport))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"fenced","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["fenced.test"],"tls":true,"ip_allow_list":{"source_range":["192.0.2.0/24"]}}}`, bhost, bport))

	// Over TCP (HTTP/2), the answer advertises HTTP/3 on the same port.
	tcp := httpsClient(secure, ca.pool)
	waitFor(t, "the route over HTTP/2", func() error {
		resp, err := tcp.Get("https://app.test/a")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.ProtoMajor != 2 {
			return fmt.Errorf("%s %d", resp.Proto, resp.StatusCode)
		}
		if got, want := resp.Header.Get("Alt-Svc"), `h3=":`+port+`"; ma=86400`; got != want {
			return fmt.Errorf("Alt-Svc %q, want %q", got, want)
		}
		return nil
	})

	h3 := h3Client(t, secure, ca)
	resp, err := h3.Get("https://app.test/a?b=1")
	if err != nil {
		t.Fatalf("GET over HTTP/3: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "GET app.test /a?b=1 xff=127.0.0.1 "; resp.StatusCode != 200 || resp.Proto != "HTTP/3.0" || string(body) != want {
		t.Errorf("GET over HTTP/3: %s %d %q, want HTTP/3.0 200 %q", resp.Proto, resp.StatusCode, body, want)
	}
	if alt := resp.Header.Get("Alt-Svc"); alt != "" {
		t.Errorf("an HTTP/3 answer advertises HTTP/3 again: %q", alt)
	}

	resp, err = h3.Post("https://app.test/form", "text/plain", strings.NewReader("payload over quic"))
	if err != nil {
		t.Fatalf("POST over HTTP/3: %v", err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := "POST app.test /form xff=127.0.0.1 payload over quic"; resp.StatusCode != 200 || string(body) != want {
		t.Errorf("POST over HTTP/3: %d %q, want 200 %q", resp.StatusCode, body, want)
	}

	resp, err = h3.Get("https://fenced.test/")
	if err != nil {
		t.Fatalf("GET fenced.test over HTTP/3: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("fenced.test over HTTP/3: %d, want 403 (127.0.0.1 is not in its allow-list)", resp.StatusCode)
	}

	// The breaker's answers are the same over HTTP/3: two failures open
	// it, and the next request gets its 503 with Retry-After at once.
	for i := 0; i < 2; i++ {
		resp, err := h3.Get("https://down.test/")
		if err != nil {
			t.Fatalf("GET down.test over HTTP/3: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusInternalServerError {
			t.Fatalf("GET down.test %d over HTTP/3: %d, want the backend's 500", i, resp.StatusCode)
		}
	}
	resp, err = h3.Get("https://down.test/")
	if err != nil {
		t.Fatalf("GET down.test over HTTP/3 with the breaker open: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("X-Levee-Diagnostic") != "circuit-open" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("open breaker over HTTP/3: %d %q Retry-After %q, want 503 circuit-open with a Retry-After",
			resp.StatusCode, resp.Header.Get("X-Levee-Diagnostic"), resp.Header.Get("Retry-After"))
	}

	p.waitLog(10*time.Second, func(m map[string]any) bool {
		return m["proto"] == "HTTP/3.0" && m["host"] == "app.test" && m["path"] == "/form"
	})

	// SIGTERM with a request in progress over HTTP/3: it finishes.
	slow := make(chan error, 1)
	go func() {
		resp, err := h3.Get("https://app.test/slow")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "GET app.test /slow") {
				err = fmt.Errorf("%d %q", resp.StatusCode, body)
			}
		}
		slow <- err
	}()
	select {
	case <-slowStarted:
	case err := <-slow:
		t.Fatalf("the slow request ended early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the slow request never reached the backend")
	}
	exited := make(chan error, 1)
	go func() {
		exitErr, err := p.Signal(syscall.SIGTERM, 20*time.Second)
		if err == nil {
			err = exitErr
		}
		exited <- err
	}()
	p.waitLog(10*time.Second, func(m map[string]any) bool {
		return strings.HasPrefix(fmt.Sprint(m["message"]), "shutting down")
	})
	close(release)
	if err := <-slow; err != nil {
		t.Errorf("the request in progress at SIGTERM: %v", err)
	}
	if err := <-exited; err != nil {
		t.Errorf("levee after SIGTERM: %v", err)
	}
}
