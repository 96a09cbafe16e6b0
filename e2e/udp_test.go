package e2e

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// udpEcho answers each datagram with name + ":" + the datagram.
func udpEcho(t *testing.T, name string) (host, port string) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte(name+":"), buf[:n]...), from)
		}
	}()
	host, port, _ = net.SplitHostPort(pc.LocalAddr().String())
	return host, port
}

func udpAsk(c net.Conn, msg string) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// Through the binary: a UDP route on a UDP listener relays datagrams to
// its backends and each client's replies back to it, many clients at
// once, new clients balanced across the backends.
// udpMessage is the j-th datagram client i sends in udpClients.
func udpMessage(i, j int) string { return "c" + strconv.Itoa(i) + "-" + strconv.Itoa(j) }

// udpClients runs n clients at once against addr, each on its own socket
// sending rounds datagrams (udpMessage) one after the other, and returns
// each client's replies in order. A client whose exchange fails fails the
// test and stops early, so its list is shorter.
func udpClients(t *testing.T, addr string, n, rounds int) [][]string {
	t.Helper()
	replies := make([][]string, n)
	var wg sync.WaitGroup
	for i := range n {
		c, err := net.Dial("udp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range rounds {
				got, err := udpAsk(c, udpMessage(i, j))
				if err != nil {
					t.Errorf("client %d sent %q: %v", i, udpMessage(i, j), err)
					return
				}
				replies[i] = append(replies[i], got)
			}
		}()
	}
	wg.Wait()
	return replies
}

func TestUDPRouteThroughTheBinary(t *testing.T) {
	ah, ap := udpEcho(t, "a")
	bh, bp := udpEcho(t, "b")
	p := startLevee(t, "--docker=false", "--listen", "dns=127.0.0.1:0,udp")
	dns := p.listenerAddr("dns")
	route := fmt.Sprintf(`{"name":"dns","protocol":"Udp","backends":[{"address":%q,"port":%s},{"address":%q,"port":%s}],"config":{"udp":{"listener":"dns","idle_timeout":"5s"}}}`, ah, ap, bh, bp)
	if code, body := apiCall(t, p, "POST", "/entrypoints", "", route, "Content-Type", "application/json"); code/100 != 2 {
		t.Fatalf("POST UDP route: %d %s", code, body)
	}
	dockertest.Eventually(t, 20*time.Second, func() error {
		c, err := net.Dial("udp", dns)
		if err != nil {
			return err
		}
		defer c.Close()
		got, err := udpAsk(c, "ping")
		if err != nil || (got != "a:ping" && got != "b:ping") {
			return fmt.Errorf("reply %q, %v; want an echo of ping", got, err)
		}
		return nil
	})
	seen := map[string]int{}
	for i, replies := range udpClients(t, dns, 16, 5) {
		backend := ""
		for j, got := range replies {
			msg := udpMessage(i, j)
			if len(got) < 2 || got[2:] != msg {
				t.Errorf("client %d sent %q, got %q", i, msg, got)
				break
			}
			if backend != "" && got[:1] != backend {
				t.Errorf("client %d moved from backend %s to %s within its session", i, backend, got[:1])
			}
			backend = got[:1]
		}
		seen[backend]++
	}
	if seen["a"] == 0 || seen["b"] == 0 {
		t.Errorf("clients per backend %v, want both backends used", seen)
	}
}

// Through the binary with labelled containers: a UDP route on the real
// engine, replies from the container's echo, 16 clients at once each
// getting its own.
func TestDockerUDPRoute(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	p := startLevee(t, "--listen", "dns=127.0.0.1:0,udp")
	dns := p.listenerAddr("dns")
	dockertest.Run(t, cli, dockertest.Spec{Image: image, Networks: []string{network}, Env: []string{"ECHO_NAME=udp-echo", "ECHO_UDP=:9053"},
		Labels: map[string]string{
			"levee.enable":              "true",
			"levee.udp.dns.listener":    "dns",
			"levee.udp.dns.port":        "9053",
			"levee.udp.dns.idleTimeout": "10s",
		}})
	dockertest.Eventually(t, 40*time.Second, func() error {
		c, err := net.Dial("udp", dns)
		if err != nil {
			return err
		}
		defer c.Close()
		got, err := udpAsk(c, "ping")
		if err != nil || got != "udp-echo:ping" {
			return fmt.Errorf("UDP route: %q, %v; want udp-echo:ping", got, err)
		}
		return nil
	})
	// Many clients at once, each getting back its own datagrams only.
	for i, replies := range udpClients(t, dns, 16, 5) {
		for j, got := range replies {
			if msg := udpMessage(i, j); got != "udp-echo:"+msg {
				t.Errorf("client %d sent %q, got %q", i, msg, got)
				break
			}
		}
	}
	_, _, route := get(t, p.apiURL()+"/entrypoints/dns", "")
	if !strings.Contains(route, `"protocol":"Udp"`) || !strings.Contains(route, `"listener":"dns"`) {
		t.Errorf("GET /entrypoints/dns does not show the UDP route: %s", route)
	}
}
