package tcp

import (
	"bufio"
	"io"
	"net"
	"testing"

	"github.com/pires/go-proxyproto"

	"github.com/levee-proxy/levee/router/config"
)

// headerBackend accepts one connection, reads its PROXY header and the
// line after it, and sends both on the channel.
func headerBackend(t *testing.T) (string, <-chan proxyRead) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan proxyRead, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		h, err := proxyproto.Read(br)
		if err != nil {
			out <- proxyRead{err: err}
			return
		}
		line, err := br.ReadString('\n')
		out <- proxyRead{h: h, line: line, err: err}
		_, _ = io.WriteString(c, "ok\n")
	}()
	return ln.Addr().String(), out
}

type proxyRead struct {
	h    *proxyproto.Header
	line string
	err  error
}

// A route with proxyProtocol opens each backend connection with a header
// naming the client's address, in the version asked for, before the
// client's bytes.
func TestProxyProtocolTellsTheBackendTheClient(t *testing.T) {
	for _, version := range []int{1, 2} {
		t.Run(string(rune('0'+version)), func(t *testing.T) {
			h := newHarness(t)
			addr, got := headerBackend(t)
			h.route(config.TCP{ProxyProtocol: version}, nil, addr)
			c := h.dial()
			if _, err := io.WriteString(c, "hello\n"); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("backend read: %v", r.err)
			}
			if r.h.Version != byte(version) {
				t.Errorf("header version %d, want %d", r.h.Version, version)
			}
			if r.h.SourceAddr.String() != c.LocalAddr().String() {
				t.Errorf("header source %s, want the client's %s", r.h.SourceAddr, c.LocalAddr())
			}
			if r.h.DestinationAddr.String() != h.ln.Addr().String() {
				t.Errorf("header destination %s, want the listener's %s", r.h.DestinationAddr, h.ln.Addr())
			}
			if r.line != "hello\n" {
				t.Errorf("after the header the backend read %q, want the client's bytes", r.line)
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			if err != nil || line != "ok\n" {
				t.Errorf("client read %q, %v; want the backend's answer", line, err)
			}
		})
	}
}

// Without proxyProtocol the backend's first bytes are the client's.
func TestNoProxyProtocolSendsNoHeader(t *testing.T) {
	h := newHarness(t)
	addr, got := headerBackend(t)
	h.route(config.TCP{}, nil, addr)
	c := h.dial()
	if _, err := io.WriteString(c, "hello\n"); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.err == nil {
		t.Fatalf("backend read a PROXY header %+v without proxyProtocol", r.h)
	}
}
