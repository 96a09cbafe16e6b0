package proxyheader

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pires/go-proxyproto"
)

type refusal struct {
	reason string
	err    error
}

// serve listens on loopback behind a PROXY listener trusting trusted;
// each accepted connection answers its RemoteAddr and the first line it
// read.
func serve(t *testing.T, timeout time.Duration, trusted ...string) (string, <-chan refusal) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var prefixes []netip.Prefix
	for _, s := range trusted {
		prefixes = append(prefixes, netip.MustParsePrefix(s))
	}
	refused := make(chan refusal, 8)
	pl := Listen(ln, Options{Trusted: prefixes, Timeout: timeout, Refused: func(reason string, _ net.Addr, err error) {
		refused <- refusal{reason, err}
	}})
	var wg sync.WaitGroup
	t.Cleanup(func() { pl.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				_, _ = io.WriteString(c, c.RemoteAddr().String()+" "+line)
			}()
		}
	}()
	return ln.Addr().String(), refused
}

// exchange dials addr, writes pre then "hi\n", and returns what came back
// before the server closed.
func exchange(t *testing.T, addr string, pre []byte) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = c.Write(append(pre, "hi\n"...))
	b, _ := io.ReadAll(c)
	return string(b)
}

func header(t *testing.T, version byte, client string) []byte {
	t.Helper()
	src, _ := net.ResolveTCPAddr("tcp", client)
	dst, _ := net.ResolveTCPAddr("tcp", "192.0.2.1:443")
	b, err := proxyproto.HeaderProxyFromAddrs(version, src, dst).Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A trusted peer's header, v1 or v2, becomes the connection's remote
// address, and the bytes after it are the stream's.
func TestTrustedHeaderGivesTheClientAddress(t *testing.T) {
	addr, _ := serve(t, time.Second, "127.0.0.0/8")
	for _, v := range []byte{1, 2} {
		if got, want := exchange(t, addr, header(t, v, "203.0.113.7:4711")), "203.0.113.7:4711 hi\n"; got != want {
			t.Errorf("v%d: server saw %q, want %q", v, got, want)
		}
	}
}

// A v2 LOCAL header (the load balancer's own health check) keeps the
// peer's address.
func TestLocalHeaderKeepsThePeer(t *testing.T) {
	addr, _ := serve(t, time.Second, "127.0.0.1/32")
	local := &proxyproto.Header{Version: 2, Command: proxyproto.LOCAL, TransportProtocol: proxyproto.UNSPEC}
	b, err := local.Format()
	if err != nil {
		t.Fatal(err)
	}
	if got := exchange(t, addr, b); !strings.HasPrefix(got, "127.0.0.1:") || !strings.HasSuffix(got, " hi\n") {
		t.Errorf("server saw %q, want the peer's own 127.0.0.1 address", got)
	}
}

// A peer that is not trusted is closed before anything is read, header or
// not: it can claim no address.
func TestUntrustedPeerIsRefused(t *testing.T) {
	addr, refused := serve(t, time.Second, "10.0.0.0/8")
	for _, pre := range [][]byte{header(t, 1, "203.0.113.7:4711"), nil} {
		if got := exchange(t, addr, pre); got != "" {
			t.Errorf("untrusted peer got %q, want the connection closed", got)
		}
		if r := <-refused; r.reason != RefusedUntrusted {
			t.Errorf("refused for %q, want %q", r.reason, RefusedUntrusted)
		}
	}
}

// A trusted peer must send a valid header: none, a truncated one or
// garbage closes the connection, at the latest when the deadline passes.
func TestTrustedPeerWithoutValidHeaderIsRefused(t *testing.T) {
	addr, refused := serve(t, 200*time.Millisecond, "127.0.0.1/32")
	for name, pre := range map[string][]byte{
		"none":      nil,
		"garbage":   []byte("GET / HTTP/1.1\r\n"),
		"truncated": []byte("PROXY TCP4 203.0.113.7"),
		"lying":     []byte("PROXY TCP4 999.0.0.1 192.0.2.1 1 2\r\n"),
	} {
		if got := exchange(t, addr, pre); got != "" {
			t.Errorf("%s: got %q, want the connection closed", name, got)
		}
		if r := <-refused; r.reason != RefusedHeader {
			t.Errorf("%s: refused for %q, want %q", name, r.reason, RefusedHeader)
		}
	}
}

// A trusted peer that sends nothing is closed when the deadline passes,
// without holding up the others.
func TestSilentPeerDoesNotBlockAccept(t *testing.T) {
	addr, refused := serve(t, 5*time.Second, "127.0.0.0/8")
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if got, want := exchange(t, addr, header(t, 2, "198.51.100.2:1000")), "198.51.100.2:1000 hi\n"; got != want {
		t.Errorf("beside a silent peer, server saw %q, want %q", got, want)
	}
	select {
	case r := <-refused:
		t.Errorf("refused %+v before the deadline", r)
	default:
	}
}
