package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// proxyGET sends a GET for host over a new connection to addr, opened
// with pre (a PROXY header or nothing), and returns the status line and
// body ("" and the error when the connection was closed).
func proxyGET(addr, host string, pre []byte) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	req := fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nX-Forwarded-For: 198.51.100.66\r\nConnection: close\r\n\r\n", host)
	if _, err := c.Write(append(pre, req...)); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b), nil
}

func proxyHeader(t *testing.T, version byte, client string) []byte {
	t.Helper()
	src, _ := net.ResolveTCPAddr("tcp", client)
	dst, _ := net.ResolveTCPAddr("tcp", "192.0.2.1:80")
	b, err := proxyproto.HeaderProxyFromAddrs(version, src, dst).Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Through the binary: on a proxy-protocol listener, the PROXY header of
// a trusted load balancer names the client that ipAllowList,
// X-Forwarded-For and a TCP route's own PROXY header to its backend see;
// a connection from a peer that is not trusted is closed, header or not.
func TestProxyProtocolThroughTheBinary(t *testing.T) {
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Header.Get("X-Forwarded-For"))
	}), ReadHeaderTimeout: 5 * time.Second}
	wln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = web.Serve(wln) }()
	defer web.Close()
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
			go func() {
				defer c.Close()
				h, err := proxyproto.Read(bufio.NewReader(c))
				if err != nil {
					_, _ = fmt.Fprintf(c, "no header: %v\n", err)
					return
				}
				_, _ = fmt.Fprintf(c, "v%d %s\n", h.Version, h.SourceAddr)
			}()
		}
	}()

	p := startLevee(t, "--docker=false", "--trusted-proxies", "127.0.0.1",
		"--listen", "lb=127.0.0.1:0,proxy-protocol", "--listen", "pg=127.0.0.1:0,tcp,proxy-protocol")
	lb, pg := p.listenerAddr("lb"), p.listenerAddr("pg")
	whost, wport, _ := net.SplitHostPort(wln.Addr().String())
	bhost, bport, _ := net.SplitHostPort(bln.Addr().String())
	for _, route := range []string{
		fmt.Sprintf(`{"name":"app","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["app.pp.test"],"ip_allow_list":{"source_range":["203.0.113.7"]}}}`, whost, wport),
		fmt.Sprintf(`{"name":"pg","protocol":"Tcp","backends":[{"address":%q,"port":%s}],"config":{"tcp":{"listener":"pg","proxy_protocol":2}}}`, bhost, bport),
	} {
		if code, body := apiCall(t, p, "POST", "/entrypoints", "", route, "Content-Type", "application/json"); code/100 != 2 {
			t.Fatalf("POST %s: %d %s", route, code, body)
		}
	}

	// The allow-list admits only the header's address; the client's own
	// X-Forwarded-For is not believed (the header's client is no proxy).
	dockertest.Eventually(t, 20*time.Second, func() error {
		got, err := proxyGET(lb, "app.pp.test", proxyHeader(t, 1, "203.0.113.7:5000"))
		if err != nil || got != "200 203.0.113.7" {
			return fmt.Errorf("allowed client: %q, %v; want 200 with X-Forwarded-For 203.0.113.7", got, err)
		}
		return nil
	})
	if got, err := proxyGET(lb, "app.pp.test", proxyHeader(t, 2, "203.0.113.8:5000")); err != nil || !strings.HasPrefix(got, "403") {
		t.Errorf("client 203.0.113.8 by a v2 header: %q, %v; want 403 from ipAllowList", got, err)
	}
	if got, err := proxyGET(lb, "app.pp.test", nil); err == nil {
		t.Errorf("a trusted peer without a header got %q, want the connection closed", got)
	}

	// A TCP route's client is the header's, and its own PROXY header to
	// the backend carries it.
	dockertest.Eventually(t, 20*time.Second, func() error {
		c, err := net.DialTimeout("tcp", pg, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(proxyHeader(t, 1, "203.0.113.9:6000")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if line != "v2 203.0.113.9:6000\n" {
			return fmt.Errorf("backend read %q, %v; want v2 naming 203.0.113.9:6000", line, err)
		}
		return nil
	})

	// A peer outside --trusted-proxies: a second Levee-side address is
	// not at hand, so the same binary is asked to trust another range.
	q := startLevee(t, "--docker=false", "--trusted-proxies", "10.0.0.0/8", "--listen", "lb=127.0.0.1:0,proxy-protocol")
	qlb := q.listenerAddr("lb")
	if code, body := apiCall(t, q, "POST", "/entrypoints", "", fmt.Sprintf(`{"name":"app","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["app.pp.test"]}}`, whost, wport), "Content-Type", "application/json"); code/100 != 2 {
		t.Fatalf("POST: %d %s", code, body)
	}
	for _, pre := range [][]byte{proxyHeader(t, 1, "203.0.113.7:5000"), nil} {
		if got, err := proxyGET(qlb, "app.pp.test", pre); err == nil {
			t.Errorf("untrusted peer (header %v) got %q, want the connection closed", pre != nil, got)
		}
	}
}
