package e2e

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// rawHTTP sends an HTTP/1.1 request as bytes over a TCP connection to addr
// and returns the answer as read until the server closes: the echo backend
// is a TCP backend like any other for a TCP route.
func rawHTTP(addr, path string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: tcp.test\r\nConnection: close\r\n\r\n", path); err != nil {
		return "", err
	}
	b, err := io.ReadAll(bufio.NewReader(c))
	return string(b), err
}

// A labelled container behind a TCP listener through the binary: bytes go
// both ways; /routes shows the route as Tcp; a second TCP service on a
// port where nothing listens trips its breaker on refused connects, after
// which connections are closed at once, which the log says.
func TestDockerTCPRouteAndBreaker(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	p := startLevee(t, "--listen", "pg=127.0.0.1:0,tcp", "--listen", "dead=127.0.0.1:0,tcp")
	pg, dead := p.listenerAddr("pg"), p.listenerAddr("dead")

	dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=tcp-echo"},
		Labels: map[string]string{
			"levee.enable":                                      "true",
			"levee.tcp.echo.listener":                           "pg",
			"levee.tcp.echo.port":                               "8080",
			"levee.tcp.gone.listener":                           "dead",
			"levee.tcp.gone.port":                               "9", // nothing listens: refused
			"levee.tcp.gone.circuitBreaker.consecutiveFailures": "2",
			"levee.tcp.gone.circuitBreaker.cooldown":            "1m",
		}})

	var answer string
	dockertest.Eventually(t, 40*time.Second, func() error {
		var err error
		answer, err = rawHTTP(pg, "/tcp-path")
		if err != nil || !strings.HasPrefix(answer, "HTTP/1.1 200") || !strings.Contains(answer, "tcp-echo") {
			return fmt.Errorf("TCP route: %v %q", err, answer)
		}
		return nil
	})
	if !strings.Contains(answer, "/tcp-path") {
		t.Errorf("the backend did not see the request as sent: %q", answer)
	}

	_, _, routes := get(t, p.apiURL()+"/entrypoints/echo", "")
	if !strings.Contains(routes, `"protocol":"Tcp"`) || !strings.Contains(routes, `"listener":"pg"`) {
		t.Errorf("GET /entrypoints/echo does not show the TCP route: %s", routes)
	}

	// Two refused connects open the breaker; the next connection is
	// closed at once without a dial.
	for range 2 {
		if out, err := rawHTTP(dead, "/"); err == nil && out != "" {
			t.Fatalf("a route to a closed port answered %q", out)
		}
	}
	_, _ = rawHTTP(dead, "/")
	p.waitLog(10*time.Second, func(l map[string]any) bool {
		return l["message"] == "tcp connection refused" && l["outcome"] == "circuit_open" && l["route"] == "gone"
	})
	_, _, breakers := get(t, p.apiURL()+"/breakers", "")
	if !strings.Contains(breakers, `"open"`) {
		t.Errorf("GET /breakers shows no open breaker: %s", breakers)
	}
}

// SNI passthrough through the binary: on one TLS listener, a client
// naming the TCP route's server name reaches the TLS backend and sees its
// own certificate, while HTTPS for another name is served by Levee with
// Levee's certificate, and a tls=terminate TCP route gets Levee's
// certificate and a plain backend.
func TestTCPSNIPassthroughBesideHTTPS(t *testing.T) {
	ca := newE2ECA(t)
	levCerts, backDir := t.TempDir(), t.TempDir()
	ca.issue(t, levCerts, "www", "www.sni.test")
	ca.issue(t, levCerts, "plain", "plain.sni.test")
	ca.issue(t, backDir, "db", "db.sni.test")
	pair, err := tls.LoadX509KeyPair(filepath.Join(backDir, "db.crt"), filepath.Join(backDir, "db.key"))
	if err != nil {
		t.Fatal(err)
	}
	bln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		t.Fatal(err)
	}
	defer bln.Close()
	go func() {
		for {
			c, err := bln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "https route "+r.Host) })}
	wln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = web.Serve(wln) }()
	defer web.Close()

	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls", "--tls-cert-dir", levCerts)
	secure := p.listenerAddr("websecure")
	bhost, bport, _ := net.SplitHostPort(bln.Addr().String())
	whost, wport, _ := net.SplitHostPort(wln.Addr().String())
	tcpRoute := fmt.Sprintf(`{"name":"db","protocol":"Tcp","backends":[{"address":%q,"port":%s}],"config":{"tcp":{"listener":"websecure","sni":["db.sni.test"],"tls":"passthrough"}}}`, bhost, bport)
	if code, body := apiCall(t, p, "POST", "/entrypoints", "", tcpRoute, "Content-Type", "application/json"); code/100 != 2 {
		t.Fatalf("POST TCP route: %d %s", code, body)
	}
	httpRoute := fmt.Sprintf(`{"name":"www","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["www.sni.test"],"tls":{"enabled":true}}}`, whost, wport)
	if code, body := apiCall(t, p, "POST", "/entrypoints", "", httpRoute, "Content-Type", "application/json"); code/100 != 2 {
		t.Fatalf("POST HTTP route: %d %s", code, body)
	}

	// A plain TCP echo backend behind a route whose TLS Levee terminates.
	pln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pln.Close()
	go func() {
		for {
			c, err := pln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	phost, pport, _ := net.SplitHostPort(pln.Addr().String())
	termRoute := fmt.Sprintf(`{"name":"plain","protocol":"Tcp","backends":[{"address":%q,"port":%s}],"config":{"tcp":{"listener":"websecure","sni":["plain.sni.test"],"tls":"terminate"}}}`, phost, pport)
	if code, body := apiCall(t, p, "POST", "/entrypoints", "", termRoute, "Content-Type", "application/json"); code/100 != 2 {
		t.Fatalf("POST terminated TCP route: %d %s", code, body)
	}

	dockertest.Eventually(t, 20*time.Second, func() error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", secure, &tls.Config{ServerName: "plain.sni.test", RootCAs: ca.pool})
		if err != nil {
			return fmt.Errorf("TLS to plain.sni.test: %w", err)
		}
		defer c.Close()
		if cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "plain.sni.test" {
			return fmt.Errorf("certificate %q, want Levee's plain.sni.test", cn)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("term")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "term" {
			return fmt.Errorf("echo %q %v", buf, err)
		}
		return nil
	})
	dockertest.Eventually(t, 20*time.Second, func() error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", secure, &tls.Config{ServerName: "db.sni.test", RootCAs: ca.pool})
		if err != nil {
			return fmt.Errorf("TLS to db.sni.test: %w", err)
		}
		defer c.Close()
		if cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "db.sni.test" {
			return fmt.Errorf("certificate %q, want the backend's", cn)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
			return fmt.Errorf("echo %q %v", buf, err)
		}
		return nil
	})
	dockertest.Eventually(t, 20*time.Second, func() error {
		resp, err := httpsClient(secure, ca.pool).Get("https://www.sni.test/")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(b) != "https route www.sni.test" {
			return fmt.Errorf("HTTPS beside the TCP route: %d %q", resp.StatusCode, b)
		}
		if cn := resp.TLS.PeerCertificates[0].Subject.CommonName; cn != "www.sni.test" {
			return fmt.Errorf("HTTPS certificate %q, want Levee's www.sni.test", cn)
		}
		return nil
	})
}

// A TCP route's breaker opens on refused connects and closes after its
// probe, through the binary with labelled containers: the first replica
// listens on another port than the labelled one; once the breaker is
// open, a replacement that listens on it is reached by the probe after
// the cooldown, and the breaker closes.
func TestDockerTCPBreakerOpensAndRecovers(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	p := startLevee(t, "--listen", "flaky=127.0.0.1:0,tcp")
	addr := p.listenerAddr("flaky")
	labels := map[string]string{
		"levee.enable": "true", "levee.tcp.flaky.listener": "flaky", "levee.tcp.flaky.port": "8081",
		"levee.tcp.flaky.circuitBreaker.consecutiveFailures": "2", "levee.tcp.flaky.circuitBreaker.cooldown": "1s",
	}
	// The image's health check asks port 8080, which the replacement
	// does not serve.
	noHealth := &container.HealthConfig{Test: []string{"NONE"}}
	down := dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=down"},
		Labels: labels, Healthcheck: noHealth})
	p.waitLogOrConnect(t, addr, func(m map[string]any) bool {
		return m["event"] == "breaker_opened" && m["route"] == "flaky"
	})
	dockertest.Remove(t, cli, down)
	dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=up", "ECHO_LISTEN=:8081"},
		Labels: labels, Healthcheck: noHealth})
	dockertest.Eventually(t, 40*time.Second, func() error {
		answer, err := rawHTTP(addr, "/back")
		if err != nil || !strings.HasPrefix(answer, "HTTP/1.1 200") || !strings.Contains(answer, `"up"`) {
			return fmt.Errorf("after the replacement: %q %v", answer, err)
		}
		return nil
	})
	p.waitLog(10*time.Second, func(m map[string]any) bool {
		return m["event"] == "breaker_closed" && m["route"] == "flaky"
	})
}

// waitLogOrConnect connects to addr (a TCP route's listener, answers
// ignored) until a log line matches, for at most 40 s.
func (p *leveeProc) waitLogOrConnect(t *testing.T, addr string, match func(map[string]any) bool) {
	t.Helper()
	dockertest.Eventually(t, 40*time.Second, func() error {
		_, _ = rawHTTP(addr, "/")
		for _, m := range p.logs() {
			if match(m) {
				return nil
			}
		}
		return errors.New("no matching log line yet")
	})
}

// SNI routing with labelled containers on the real engine: on one TLS
// listener, a passthrough route reaches a container that terminates TLS
// with its own certificate, a terminate route gets Levee's certificate
// and a plain container, and an HTTPS route of a third container is
// served beside them on the same port.
func TestDockerSNIPassthroughAndTermination(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	ca := newE2ECA(t)
	levCerts, backCerts := t.TempDir(), t.TempDir()
	ca.issue(t, levCerts, "term", "term.sni.test")
	ca.issue(t, levCerts, "www", "www.sni.test")
	ca.issue(t, backCerts, "db", "db.sni.test")
	// The image runs as 65532: its certificate and key must be readable.
	for _, f := range []string{"", "db.crt", "db.key"} {
		if err := os.Chmod(filepath.Join(backCerts, f), map[bool]os.FileMode{true: 0o755, false: 0o644}[f == ""]); err != nil {
			t.Fatal(err)
		}
	}
	p := startLevee(t, "--listen", "websecure=127.0.0.1:0,tls", "--tls-cert-dir", levCerts)
	secure := p.listenerAddr("websecure")

	// The image's health check asks for plain HTTP, which this one does
	// not serve.
	dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network}, Binds: []string{backCerts + ":/certs:ro"},
		Healthcheck: &container.HealthConfig{Test: []string{"NONE"}},
		Env:         []string{"ECHO_NAME=db-tls", "ECHO_TLS_CERT=/certs/db.crt", "ECHO_TLS_KEY=/certs/db.key"},
		Labels: map[string]string{
			"levee.enable": "true", "levee.tcp.db.listener": "websecure", "levee.tcp.db.sni": "db.sni.test",
			"levee.tcp.db.tls": "passthrough", "levee.tcp.db.port": "8080",
		}})
	dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=term-plain"},
		Labels: map[string]string{
			"levee.enable": "true", "levee.tcp.term.listener": "websecure", "levee.tcp.term.sni": "term.sni.test",
			"levee.tcp.term.tls": "terminate", "levee.tcp.term.port": "8080",
		}})
	dockertest.Run(t, cli, echoSpec(image, network, "www-https", "www.sni.test", map[string]string{"levee.http.app.tls": "true"}))

	for _, c := range []struct{ name, cert, echo string }{
		{"db.sni.test", "db.sni.test", "db-tls"},         // the container's own certificate
		{"term.sni.test", "term.sni.test", "term-plain"}, // Levee's
		{"www.sni.test", "www.sni.test", "www-https"},    // Levee's, an HTTP route
	} {
		dockertest.Eventually(t, 40*time.Second, func() error {
			cn, answer, err := httpOverTLS(secure, c.name, ca)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if cn != c.cert || !strings.HasPrefix(answer, "HTTP/1.1 200") || !strings.Contains(answer, c.echo) {
				return fmt.Errorf("%s: certificate %q and answer %q, want %s's certificate and %s's answer", c.name, cn, answer, c.cert, c.echo)
			}
			return nil
		})
	}
}

// PROXY protocol both ways with a labelled container: a trusted load
// balancer's v1 header on a proxy-protocol TCP listener names the client,
// and Levee tells the container, which parses PROXY headers, that client
// in a v2 header of its own; a connection from a peer that is not
// trusted is closed before any byte reaches the container.
func TestDockerProxyProtocolBothWays(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	p := startLevee(t, "--trusted-proxies", "127.0.0.1", "--listen", "pg=127.0.0.1:0,tcp,proxy-protocol")
	// A peer outside --trusted-proxies: a second Levee-side address is not
	// at hand, so a second binary trusts another range.
	q := startLevee(t, "--trusted-proxies", "10.0.0.0/8", "--listen", "closed=127.0.0.1:0,tcp,proxy-protocol")
	pg, closed := p.listenerAddr("pg"), q.listenerAddr("closed")
	// The image's health check sends no PROXY header.
	dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network},
		Env: []string{"ECHO_NAME=pp-echo", "ECHO_PROXY_PROTOCOL=1"}, Healthcheck: &container.HealthConfig{Test: []string{"NONE"}},
		Labels: map[string]string{
			"levee.enable": "true", "levee.tcp.pg.listener": "pg", "levee.tcp.pg.port": "8080", "levee.tcp.pg.proxyProtocol": "v2",
			"levee.tcp.gone.listener": "closed", "levee.tcp.gone.port": "8080", "levee.tcp.gone.proxyProtocol": "v2",
		}})

	send := func(addr, header string) (string, error) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return "", err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, header+"GET /pp HTTP/1.1\r\nHost: pp.test\r\nConnection: close\r\n\r\n"); err != nil {
			return "", err
		}
		b, err := io.ReadAll(bufio.NewReader(c))
		return string(b), err
	}
	dockertest.Eventually(t, 40*time.Second, func() error {
		answer, err := send(pg, "PROXY TCP4 203.0.113.9 127.0.0.1 6000 5432\r\n")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(answer, "HTTP/1.1 200") || !strings.Contains(answer, "pp-echo") ||
			!strings.Contains(answer, `"remote_addr": "203.0.113.9:6000"`) {
			return fmt.Errorf("answer %q, want pp-echo's echo naming 203.0.113.9:6000, the load balancer's client", answer)
		}
		return nil
	})
	// 127.0.0.1 is not among the second binary's trusted proxies: the
	// connection is closed before any byte reaches the container.
	if answer, _ := send(closed, "PROXY TCP4 203.0.113.9 127.0.0.1 6000 5432\r\n"); answer != "" {
		t.Errorf("an untrusted peer's connection was served: %q", answer)
	}
	waitForMetric(t, q, `levee_proxy_protocol_refused_total{listener="closed",reason="untrusted"}`, 1)
}

// httpOverTLS sends one HTTP/1.1 GET over TLS to addr, naming serverName
// by SNI and trusting ca, and returns the certificate's common name and
// the answer as read until the server closes.
func httpOverTLS(addr, serverName string, ca *e2eCA) (string, string, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{ServerName: serverName, RootCAs: ca.pool})
	if err != nil {
		return "", "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	cn := c.ConnectionState().PeerCertificates[0].Subject.CommonName
	if _, err := fmt.Fprintf(c, "GET /sni HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", serverName); err != nil {
		return cn, "", err
	}
	b, err := io.ReadAll(bufio.NewReader(c))
	return cn, string(b), err
}

// A TCP connection being relayed when Levee is told to stop keeps working
// until its client closes it, within --shutdown-timeout; new connections
// are no longer accepted meanwhile.
func TestTCPConnectionDrainsOnShutdown(t *testing.T) {
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer bln.Close()
	go func() {
		for {
			c, err := bln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	p := startLevee(t, "--docker=false", "--shutdown-timeout", "20s", "--listen", "pg=127.0.0.1:0,tcp")
	pg := p.listenerAddr("pg")
	host, port, _ := net.SplitHostPort(bln.Addr().String())
	route := fmt.Sprintf(`{"name":"pg","protocol":"Tcp","backends":[{"address":%q,"port":%s}],"config":{"tcp":{"listener":"pg"}}}`, host, port)
	if code, body := apiCall(t, p, "POST", "/entrypoints", "", route, "Content-Type", "application/json"); code/100 != 2 {
		t.Fatalf("POST TCP route: %d %s", code, body)
	}
	var c net.Conn
	exchange := func(msg string) error {
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(c, msg); err != nil {
			return err
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
			return fmt.Errorf("echo %q %v", buf, err)
		}
		return nil
	}
	dockertest.Eventually(t, 20*time.Second, func() error {
		if c != nil {
			c.Close()
		}
		c, err = net.DialTimeout("tcp", pg, 5*time.Second)
		if err != nil {
			return err
		}
		return exchange("before")
	})
	defer c.Close()
	exited := make(chan error, 1)
	go func() {
		exitErr, err := p.Signal(syscall.SIGTERM, 30*time.Second)
		exited <- errors.Join(exitErr, err)
	}()
	p.waitLog(10*time.Second, func(l map[string]any) bool { return strings.HasPrefix(fmt.Sprint(l["message"]), "shutting down") })
	if err := exchange("during"); err != nil {
		t.Fatalf("the relayed connection broke at shutdown: %v", err)
	}
	select {
	case err := <-exited:
		t.Fatalf("levee exited with a connection still relayed: %v", err)
	default:
	}
	c.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("levee did not exit once the last connection closed")
	}
}
