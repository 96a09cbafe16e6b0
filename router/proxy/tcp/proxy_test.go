package tcp

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// harness is a router with TCP routes and a proxy serving its TCP
// listener "pg" on a loopback port.
type harness struct {
	t   *testing.T
	r   *router.Router
	p   *Proxy
	reg *prometheus.Registry
	ln  net.Listener
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessTLS(t, nil)
}

// newHarnessTLS is newHarness with the TLS configuration of tls=terminate
// routes.
func newHarnessTLS(t *testing.T, cfg *tls.Config) *harness {
	t.Helper()
	return newHarnessOf(t, Options{TLS: cfg})
}

// newHarnessOf is newHarness with the proxy's options (their Snapshot,
// Logger and Registerer are the harness's).
func newHarnessOf(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, r: router.New(router.Options{}), reg: prometheus.NewRegistry()}
	opts.Snapshot, opts.Logger, opts.Registerer = h.r.Snapshot, zerolog.Nop(), h.reg
	h.p = New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.ln = ln
	go func() { _ = h.p.Serve(ln, "pg") }()
	t.Cleanup(func() {
		_ = ln.Close()
		_ = h.p.Close()
		h.r.Close()
	})
	return h
}

// route installs a TCP route on listener "pg" to the backends at addrs.
func (h *harness) route(tcp config.TCP, cb *config.CircuitBreaker, addrs ...string) {
	h.t.Helper()
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source = "db", "db", config.SourceAPI
	ep.Protocol = config.ProtocolTCP
	if tcp.Listener == "" {
		tcp.Listener = "pg"
	}
	ep.TCP = tcp
	ep.CircuitBreaker = cb
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		n, _ := strconv.Atoi(port)
		ep.Backends = append(ep.Backends, config.Backend{Address: host, Port: n, Weight: 1})
	}
	h.r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
}

func (h *harness) dial() net.Conn {
	h.t.Helper()
	c, err := net.Dial("tcp", h.ln.Addr().String())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func (h *harness) outcomes(outcome string) float64 {
	return value(h.p.conns.WithLabelValues("pg", "db", outcome))
}

// echoBackend echoes each connection line by line; after the client's
// EOF it writes "bye\n" and closes (a half-close observer).
func echoBackend(t *testing.T) string {
	t.Helper()
	return backendFunc(t, func(c net.Conn) {
		_, _ = io.Copy(c, c)
		_, _ = c.Write([]byte("bye\n"))
	})
}

// backendFunc listens on a loopback port until the test ends, serving
// each connection with serve, then closing it; it returns the address.
func backendFunc(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// closedPort is a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func readLine(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	s, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %q, %v", s, err)
	}
	return s
}

// Bytes go both ways; the client's half-close reaches the backend, whose
// answer after it still reaches the client, then EOF.
func TestEchoAndHalfClose(t *testing.T) {
	h := newHarness(t)
	h.route(config.TCP{}, nil, echoBackend(t))
	c := h.dial()
	r := bufio.NewReader(c)
	if _, err := c.Write([]byte("hello\n")); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, r); got != "hello\n" {
		t.Fatalf("echo %q", got)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, r); got != "bye\n" {
		t.Fatalf("after half-close got %q, want bye", got)
	}
	if _, err := r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("want EOF after the backend closed, got %v", err)
	}
	if h.outcomes(OutcomeRelayed) != 1 {
		t.Errorf("relayed %v, want 1", h.outcomes(OutcomeRelayed))
	}
}

// A connection silent both ways for the idle timeout is closed.
func TestIdleTimeoutCloses(t *testing.T) {
	h := newHarness(t)
	h.route(config.TCP{IdleTimeout: 200 * time.Millisecond}, nil, echoBackend(t))
	// The idle clock starts when the proxy accepts, which may be before
	// the dial returns here: measure from before the dial.
	start := time.Now()
	c := h.dial()
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, io.EOF) {
		// The close may come as a reset once the backend's "bye" raced it.
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the connection was not closed by the idle timeout: %v", err)
		}
	}
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Fatalf("closed after %v, before the idle timeout", el)
	}
}

// Beyond tcp.maxConnections a connection is closed at once; one closing
// frees its slot.
func TestConnectionLimit(t *testing.T) {
	h := newHarness(t)
	h.route(config.TCP{MaxConnections: 1}, nil, echoBackend(t))
	first := h.dial()
	r := bufio.NewReader(first)
	_, _ = first.Write([]byte("one\n"))
	if readLine(t, r) != "one\n" {
		t.Fatal("first connection not relayed")
	}
	second := h.dial()
	if _, err := second.Read(make([]byte, 1)); err == nil {
		t.Fatal("a second connection beyond the limit was relayed")
	}
	if h.outcomes(OutcomeLimit) != 1 {
		t.Errorf("limit outcomes %v, want 1", h.outcomes(OutcomeLimit))
	}
	first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := h.dial()
		_, _ = c.Write([]byte("again\n"))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil && line == "again\n" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot of a closed connection was never freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Refused connects trip the breaker; an open breaker closes connections
// without dialling; after the cooldown a probe that connects closes it.
func TestBreakerTripsOnRefusedConnectsAndRecovers(t *testing.T) {
	h := newHarness(t)
	cb := config.DefaultCircuitBreaker()
	cb.Params.ConsecutiveFailures = 2
	cb.Params.Cooldown = 300 * time.Millisecond
	cb.Params.ProbeTimeout = 300 * time.Millisecond
	p, errs := cb.Params.Validate()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	cb.Params = p
	dead := closedPort(t)
	h.route(config.TCP{ConnectTimeout: time.Second}, &cb, dead)
	for range 2 {
		c := h.dial()
		_, _ = c.Read(make([]byte, 1))
	}
	g := h.r.Snapshot().MatchTCP("pg", "").State().Guard()
	if st := g.Breaker().State(); st != breaker.Open {
		t.Fatalf("breaker %v after 2 refused connects, want open", st)
	}
	if h.outcomes(OutcomeConnectFailed) != 2 {
		t.Errorf("connect_failed %v, want 2", h.outcomes(OutcomeConnectFailed))
	}
	c := h.dial()
	_, _ = c.Read(make([]byte, 1))
	if h.outcomes(OutcomeCircuitOpen) != 1 || h.outcomes(OutcomeConnectFailed) != 2 {
		t.Fatalf("open breaker: circuit_open %v connect_failed %v, want 1 and 2", h.outcomes(OutcomeCircuitOpen), h.outcomes(OutcomeConnectFailed))
	}
	// The backend comes back on another port: the route follows.
	h.route(config.TCP{ConnectTimeout: time.Second}, &cb, echoBackend(t))
	deadline := time.Now().Add(5 * time.Second)
	for g.Breaker().State() != breaker.Closed {
		if time.Now().After(deadline) {
			t.Fatalf("breaker still %v", g.Breaker().State())
		}
		c := h.dial()
		_, _ = c.Write([]byte("ping\n"))
		_, _ = bufio.NewReader(c).ReadString('\n')
		c.Close()
		time.Sleep(20 * time.Millisecond)
	}
}

// A client that leaves before the backend said anything is no failure of
// the backend: many such connections never open the breaker.
func TestClientCloseIsNotABackendFailure(t *testing.T) {
	h := newHarness(t)
	cb := config.DefaultCircuitBreaker()
	cb.Params.ConsecutiveFailures = 1
	p, _ := cb.Params.Validate()
	cb.Params = p
	// A backend that never speaks first and reads until EOF.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ended := make(chan struct{}, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close(); ended <- struct{}{} }()
		}
	}()
	h.route(config.TCP{}, &cb, ln.Addr().String())
	for range 3 {
		c := h.dial()
		c.Close()
		select {
		case <-ended:
		case <-time.After(5 * time.Second):
			t.Fatal("the backend never saw the client leave")
		}
	}
	g := h.r.Snapshot().MatchTCP("pg", "").State().Guard()
	deadline := time.Now().Add(2 * time.Second)
	for value(h.p.open.WithLabelValues("db")) != 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := g.Breaker().State(); st != breaker.Closed {
		t.Fatalf("breaker %v after clients left early, want closed", st)
	}
	if s := g.Breaker().Stats(); s.Failures != 0 {
		t.Errorf("failures %d, want 0", s.Failures)
	}
}

// A backend that resets before its first byte, while the client waits, is
// a failure.
func TestResetBeforeFirstByteIsAFailure(t *testing.T) {
	h := newHarness(t)
	cb := config.DefaultCircuitBreaker()
	cb.Params.ConsecutiveFailures = 1
	p, _ := cb.Params.Validate()
	cb.Params = p
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*net.TCPConn).SetLinger(0) // close with RST
			c.Close()
		}
	}()
	h.route(config.TCP{}, &cb, ln.Addr().String())
	c := h.dial()
	_, _ = c.Read(make([]byte, 1))
	g := h.r.Snapshot().MatchTCP("pg", "").State().Guard()
	deadline := time.Now().Add(5 * time.Second)
	for g.Breaker().State() != breaker.Open {
		if time.Now().After(deadline) {
			t.Fatalf("breaker %v after a reset before the first byte, want open", g.Breaker().State())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// No route on the listener: the connection is closed and counted.
func TestNoRouteCloses(t *testing.T) {
	h := newHarness(t)
	c := h.dial()
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a connection without a route was relayed")
	}
	if got := value(h.p.conns.WithLabelValues("pg", "", OutcomeNoRoute)); got != 1 {
		t.Errorf("no_route %v, want 1", got)
	}
}

// value reads a counter or gauge.
func value(m prometheus.Metric) float64 {
	var out dto.Metric
	if err := m.Write(&out); err != nil {
		panic(err)
	}
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	return out.Gauge.GetValue()
}

// A client that stops reading while the backend sends is closed after the
// idle timeout: the write toward it is bounded too.
func TestStalledReaderIsClosed(t *testing.T) {
	h := newHarness(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		chunk := make([]byte, 64<<10)
		for {
			if _, err := c.Write(chunk); err != nil {
				done <- err // Levee closed the backend side
				return
			}
		}
	}()
	h.route(config.TCP{IdleTimeout: 300 * time.Millisecond}, nil, ln.Addr().String())
	c := h.dial()
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a client that never reads held the relay past its idle timeout")
	}
}

// A backend that reads the request and resets without answering is a
// failure even when the client has half-closed after its request (it is
// still there to read the answer).
func TestResetAfterClientHalfCloseIsAFailure(t *testing.T) {
	h := newHarness(t)
	cb := config.DefaultCircuitBreaker()
	cb.Params.ConsecutiveFailures = 1
	p, _ := cb.Params.Validate()
	cb.Params = p
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, c) // the whole request, to the client's FIN
			_ = c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}()
	h.route(config.TCP{}, &cb, ln.Addr().String())
	c := h.dial()
	_, _ = c.Write([]byte("request"))
	_ = c.(*net.TCPConn).CloseWrite()
	_, _ = c.Read(make([]byte, 1))
	g := h.r.Snapshot().MatchTCP("pg", "").State().Guard()
	deadline := time.Now().Add(5 * time.Second)
	for g.Breaker().State() != breaker.Open {
		if time.Now().After(deadline) {
			t.Fatalf("breaker %v after a reset with no answer, want open", g.Breaker().State())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// namedBackend answers each connection with its name and closes.
func namedBackend(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, name)
			c.Close()
		}
	}()
	return ln.Addr().String()
}

// Connections alternate between the backends (round robin); a backend
// that refuses gives its turn to the next, and the client never sees it.
func TestRoundRobinAndConnectFailover(t *testing.T) {
	h := newHarness(t)
	h.route(config.TCP{}, nil, namedBackend(t, "a"), closedPort(t), namedBackend(t, "b"))
	seen := map[string]int{}
	for range 6 {
		c := h.dial()
		b, err := io.ReadAll(c)
		if err != nil || len(b) == 0 {
			t.Fatalf("connection got %q, %v: the refused backend reached the client", b, err)
		}
		seen[string(b)]++
	}
	if seen["a"] == 0 || seen["b"] == 0 || seen["a"]+seen["b"] != 6 {
		t.Errorf("answers %v, want both backends", seen)
	}
}

// A TCP route's active health check is a TCP connect: a backend that
// refuses is taken out of rotation, one that accepts stays in.
func TestConnectHealthCheck(t *testing.T) {
	h := newHarness(t)
	dead, live := closedPort(t), namedBackend(t, "live")
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source, ep.Protocol = "db", "db", config.SourceAPI, config.ProtocolTCP
	ep.TCP = config.TCP{Listener: "pg"}
	hc := config.DefaultHealthCheck()
	hc.Interval, hc.Timeout, hc.Rise, hc.Fall = 50*time.Millisecond, 50*time.Millisecond, 1, 1
	ep.HealthCheck = &hc
	for _, a := range []string{dead, live} {
		host, port, _ := net.SplitHostPort(a)
		n, _ := strconv.Atoi(port)
		ep.Backends = append(ep.Backends, config.Backend{Address: host, Port: n, Weight: 1})
	}
	h.r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
	bs := h.r.Snapshot().MatchTCP("pg", "").Backends()
	deadline := time.Now().Add(5 * time.Second)
	for !bs[0].State().Down() {
		if time.Now().After(deadline) {
			t.Fatal("the refusing backend was never taken out of rotation")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if bs[1].State().Down() {
		t.Error("the accepting backend was taken out of rotation")
	}
	if got := testBody(t, h.dial()); got != "live" {
		t.Errorf("answer %q, want the live backend's", got)
	}
}

func testBody(t *testing.T, c net.Conn) string {
	t.Helper()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The relays' copy buffers are reused from connection to connection, and
// no byte of one connection reaches another: a connection that gets a
// long answer, then one that gets a one-byte answer, which arrives alone.
func TestReusedBuffersCarryNoByteAcrossConnections(t *testing.T) {
	long := bytes.Repeat([]byte{'A'}, 30000)
	addr := backendFunc(t, func(c net.Conn) {
		var ask [1]byte
		if _, err := io.ReadFull(c, ask[:]); err != nil {
			return
		}
		if ask[0] == 'L' {
			_, _ = c.Write(long)
		} else {
			_, _ = c.Write([]byte{'b'})
		}
	})
	for _, noSplice := range []bool{true, false} {
		h := newHarnessOf(t, Options{NoSplice: noSplice})
		h.route(config.TCP{}, nil, addr)
		for i, tc := range []struct {
			ask  byte
			want []byte
		}{{'L', long}, {'s', []byte{'b'}}, {'L', long}, {'s', []byte{'b'}}} {
			c := h.dial()
			if _, err := c.Write([]byte{tc.ask}); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.ReadAll(c)
			c.Close()
			if err != nil {
				t.Fatalf("noSplice=%v, connection %d: reading: %v", noSplice, i, err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("noSplice=%v, connection %d: got %d bytes (%.10q…), want %d", noSplice, i, len(got), got, len(tc.want))
			}
		}
	}
}
