package e2e

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
