package tcp

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/server"
)

// Once the backend has answered, both directions between two plain TCP
// connections go over to splice(2), and every byte arrives intact, in
// order, both ways at once; with NoSplice the same bytes take the
// buffered copy.
func TestSplicedRelayMovesBytesIntact(t *testing.T) {
	for _, noSplice := range []bool{false, true} {
		h := newHarnessOf(t, Options{NoSplice: noSplice})
		h.route(config.TCP{}, nil, echoBackend(t))
		c := h.dial()
		r := bufio.NewReader(c)
		if _, err := c.Write([]byte("hi\n")); err != nil {
			t.Fatal(err)
		}
		if got := readLine(t, r); got != "hi\n" {
			t.Fatalf("echo %q", got)
		}
		data := make([]byte, 8<<20)
		_, _ = rand.Read(data)
		sent := sha256.Sum256(data)
		go func() {
			_, _ = c.Write(data)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		got := make([]byte, len(data))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("noSplice=%v: reading the echo: %v", noSplice, err)
		}
		if sha256.Sum256(got) != sent {
			t.Fatalf("noSplice=%v: the echo differs from what was sent", noSplice)
		}
		if rest, _ := io.ReadAll(r); !bytes.Equal(rest, []byte("bye\n")) {
			t.Fatalf("noSplice=%v: after the data %q, want bye then EOF", noSplice, rest)
		}
		switch n := h.p.spliced(); {
		case noSplice && n != 0:
			t.Errorf("NoSplice: %d directions spliced", n)
		case !noSplice && n != 2:
			t.Errorf("%d directions spliced, want both", n)
		}
	}
}

// Behind serve's connection limit (server.LimitListener, whose
// connections are PlainConn wrappers) both directions still go over to
// splice(2), and the bytes arrive intact.
func TestSplicedRelayBehindTheConnectionLimit(t *testing.T) {
	h := &harness{t: t, r: router.New(router.Options{}), reg: prometheus.NewRegistry()}
	h.p = New(Options{Snapshot: h.r.Snapshot, Logger: zerolog.Nop(), Registerer: h.reg})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.ln = ln
	go func() { _ = h.p.Serve(server.LimitListener(ln, 8, nil), "pg") }()
	t.Cleanup(func() {
		_ = ln.Close()
		_ = h.p.Close()
		h.r.Close()
	})
	h.route(config.TCP{}, nil, echoBackend(t))
	c := h.dial()
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, r); got != "hi\n" {
		t.Fatalf("echo %q", got)
	}
	data := make([]byte, 1<<20)
	_, _ = rand.Read(data)
	go func() {
		_, _ = c.Write(data)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatalf("reading the echo: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatal("the echo differs from what was sent")
	}
	if n := h.p.spliced(); n != 2 {
		t.Errorf("%d directions spliced behind the connection limit, want both", n)
	}
}

// On the spliced copy a stream that flows one way only outlives the idle
// limit (the quiet direction sees the other move), and a relay silent both
// ways is closed after it.
func TestSplicedRelayIdle(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const ticks = 20
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for range ticks { // 1.2 s of a byte every 60 ms, 4 idle limits
			if _, err := c.Write([]byte("x")); err != nil {
				return
			}
			time.Sleep(60 * time.Millisecond) // the stream's pace, not synchronisation
		}
		_, _ = c.Write([]byte("\n"))
		_, _ = io.Copy(io.Discard, c) // then silence both ways, until Levee closes
	}()
	h.route(config.TCP{IdleTimeout: 300 * time.Millisecond}, nil, ln.Addr().String())
	c := h.dial()
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil || len(line) != ticks+1 {
		t.Fatalf("one-way stream cut after %d of %d bytes: %v", len(line), ticks+1, err)
	}
	quiet := time.Now()
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a relay silent both ways was not closed: %v", err)
		}
	}
	if el := time.Since(quiet); el < 300*time.Millisecond {
		t.Fatalf("closed %v after the last byte, before the idle limit", el)
	}
	if h.p.spliced() == 0 {
		t.Error("the relay never went over to splice")
	}
}

// spliced is how many relay directions went over to splice(2).
func (p *Proxy) spliced() int64 {
	if p.splice == nil {
		return 0
	}
	return p.splice.started.Load()
}

// BenchmarkRelay moves 32 MiB from a backend to a client through the
// proxy per operation, on the buffered copy and on splice(2), in one run.
func BenchmarkRelay(b *testing.B) {
	for _, mode := range []struct {
		name     string
		noSplice bool
	}{{"buffered", true}, {"spliced", false}} {
		b.Run(mode.name, func(b *testing.B) {
			const size = 32 << 20
			back, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer back.Close()
			chunk := make([]byte, 256<<10)
			go func() {
				for {
					c, err := back.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						for sent := 0; sent < size; sent += len(chunk) {
							if _, err := c.Write(chunk); err != nil {
								return
							}
						}
					}()
				}
			}()
			r := router.New(router.Options{})
			defer r.Close()
			p := New(Options{Snapshot: r.Snapshot, Logger: zerolog.Nop(), NoSplice: mode.noSplice})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() { _ = p.Serve(ln, "pg") }()
			defer p.Close()
			h := &harness{r: r, p: p, ln: ln}
			h.routeOn(b, back.Addr().String())
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, c); n != size {
					b.Fatalf("got %d bytes of %d: %v", n, size, err)
				}
				c.Close()
			}
		})
	}
}

// routeOn installs the route of harness.route for a benchmark.
func (h *harness) routeOn(tb testing.TB, addr string) {
	tb.Helper()
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source = "db", "db", config.SourceAPI
	ep.Protocol = config.ProtocolTCP
	ep.TCP = config.TCP{Listener: "pg"}
	host, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	ep.Backends = []config.Backend{{Address: host, Port: n, Weight: 1}}
	h.r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
}

// BenchmarkRelayPingPong is small-message request/response traffic through
// a route: one connection, a 64-byte message to an echo backend and back
// per operation, on the buffered and on the spliced copy.
func BenchmarkRelayPingPong(b *testing.B) {
	for _, mode := range []struct {
		name     string
		noSplice bool
	}{{"buffered", true}, {"spliced", false}} {
		b.Run(mode.name, func(b *testing.B) {
			back, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer back.Close()
			go func() {
				for {
					c, err := back.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						_, _ = io.Copy(c, c)
					}()
				}
			}()
			r := router.New(router.Options{})
			defer r.Close()
			p := New(Options{Snapshot: r.Snapshot, Logger: zerolog.Nop(), NoSplice: mode.noSplice})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() { _ = p.Serve(ln, "pg") }()
			defer p.Close()
			h := &harness{r: r, p: p, ln: ln}
			h.routeOn(b, back.Addr().String())
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			msg, got := make([]byte, 64), make([]byte, 64)
			b.ResetTimer()
			for range b.N {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
