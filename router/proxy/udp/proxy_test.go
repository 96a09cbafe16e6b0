package udp

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/e2e/fakeclock"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// clock is a settable clock for idle expiry.
type harness struct {
	t     *testing.T
	r     *router.Router
	p     *Proxy
	l     *Listener
	addr  string
	clock *fakeclock.Clock
}

// newHarness serves UDP listener "dns" on a loopback port, its route
// (with u's settings and breaker cb) to the backends at addrs.
func newHarness(t *testing.T, u config.UDP, cb *config.CircuitBreaker, addrs ...string) *harness {
	t.Helper()
	h := &harness{t: t, r: router.New(router.Options{}), clock: fakeclock.New(time.Unix(1000, 0))}
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source = "dns", "dns", config.SourceAPI
	ep.Protocol = config.ProtocolUDP
	u.Listener = "dns"
	ep.UDP = u
	ep.CircuitBreaker = cb
	for _, a := range addrs {
		host, port, _ := net.SplitHostPort(a)
		n, _ := strconv.Atoi(port)
		ep.Backends = append(ep.Backends, config.Backend{Address: host, Port: n, Weight: 1})
	}
	h.r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
	p := New(Options{Snapshot: h.r.Snapshot, Logger: zerolog.Nop(), Now: h.clock.Now})
	h.p = p
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.addr = pc.LocalAddr().String()
	h.l = p.Listen(pc, "dns")
	done := make(chan struct{})
	go func() { defer close(done); _ = h.l.Serve() }()
	t.Cleanup(func() { _ = pc.Close(); <-done; h.r.Close() })
	return h
}

// echoBackend answers each datagram with name + ":" + the datagram.
func echoBackend(t *testing.T, name string) string {
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
	return pc.LocalAddr().String()
}

// client is one client socket toward the proxy.
func (h *harness) client() net.Conn {
	h.t.Helper()
	c, err := net.Dial("udp", h.addr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// ask sends msg on c and returns the reply ("" after a second without).
func ask(t *testing.T, c net.Conn, msg string) string {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// Datagrams go to a backend and its replies come back to the client that
// sent them; a client keeps its backend, and new clients take the next
// backend in turn.
func TestEchoThroughTheProxy(t *testing.T) {
	h := newHarness(t, config.UDP{}, nil, echoBackend(t, "a"), echoBackend(t, "b"))
	c1, c2 := h.client(), h.client()
	r1 := ask(t, c1, "one")
	r2 := ask(t, c2, "two")
	if len(r1) < 2 || len(r2) < 2 || r1[2:] != "one" || r2[2:] != "two" {
		t.Fatalf("replies %q %q, want each client's own datagram echoed", r1, r2)
	}
	if r1[:1] == r2[:1] {
		t.Errorf("both clients on backend %s, want round robin across a and b", r1[:1])
	}
	for range 3 {
		if got := ask(t, c1, "again"); got != r1[:2]+"again" {
			t.Errorf("client 1 got %q, want its session's backend %s", got, r1[:1])
		}
	}
	if n := h.l.Sessions(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
}

// Many clients at once each get their own replies, never another's.
func TestRepliesNeverCross(t *testing.T) {
	h := newHarness(t, config.UDP{}, nil, echoBackend(t, "a"), echoBackend(t, "b"), echoBackend(t, "c"))
	var wg sync.WaitGroup
	for i := range 20 {
		c := h.client()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				msg := strconv.Itoa(i) + "-" + strconv.Itoa(j)
				if got := ask(t, c, msg); len(got) < 2 || got[2:] != msg {
					t.Errorf("client %d sent %q, got %q", i, msg, got)
				}
			}
		}()
	}
	wg.Wait()
}

// A session idle for udp.idleTimeout ends at the next sweep; the client's
// next datagram opens a new one (on the next backend).
func TestSessionExpiresWhenIdle(t *testing.T) {
	h := newHarness(t, config.UDP{IdleTimeout: 30 * time.Second}, nil, echoBackend(t, "a"), echoBackend(t, "b"))
	c := h.client()
	first := ask(t, c, "x")
	if first == "" {
		t.Fatal("no reply")
	}
	h.clock.Advance(29 * time.Second)
	h.l.Sweep()
	if n := h.l.Sessions(); n != 1 {
		t.Fatalf("%d sessions before the idle timeout, want 1", n)
	}
	if got := ask(t, c, "x"); got != first {
		t.Errorf("before expiry got %q, want the same backend's %q", got, first)
	}
	h.clock.Advance(30 * time.Second)
	h.l.Sweep()
	if n := h.l.Sessions(); n != 0 {
		t.Fatalf("%d sessions after the idle timeout, want 0", n)
	}
	if got := ask(t, c, "x"); got == "" || got == first {
		t.Errorf("after expiry got %q, want a new session on the other backend (not %q)", got, first)
	}
}

// With udp.maxSessions sessions open, a new client takes the place of
// the least recently active session, which ends and is counted; the
// evicted client's next datagram opens a new session, and every reply
// still reaches the client that asked.
func TestIdlestSessionEvicted(t *testing.T) {
	h := newHarness(t, config.UDP{IdleTimeout: time.Minute, MaxSessions: 2}, nil, echoBackend(t, "a"))
	c1, c2, c3 := h.client(), h.client(), h.client()
	if ask(t, c1, "1") != "a:1" || ask(t, c2, "2") != "a:2" {
		t.Fatal("no reply within the bound")
	}
	if got := ask(t, c1, "1"); got != "a:1" { // c2 is now the least recently active
		t.Fatalf("client 1 got %q, want a:1", got)
	}
	if got := ask(t, c3, "3"); got != "a:3" {
		t.Fatalf("a third client beyond a bound of 2 got %q, want a:3 (a session evicted for it)", got)
	}
	if n, ev := h.l.Sessions(), value(h.p.evicted.WithLabelValues("dns")); n != 2 || ev != 1 {
		t.Fatalf("%d sessions, %v evicted, want 2 and 1", n, ev)
	}
	opened := func() float64 { return value(h.p.sessions.WithLabelValues("dns", "dns", OutcomeOpened)) }
	if got := ask(t, c1, "1"); got != "a:1" || opened() != 3 {
		t.Fatalf("client 1 got %q with %v sessions opened, want a:1 on its own session (3 opened)", got, opened())
	}
	// Client 2 was the one evicted: it opens a new session (evicting client 3 now).
	if got := ask(t, c2, "2"); got != "a:2" || opened() != 4 {
		t.Fatalf("evicted client 2 got %q with %v sessions opened, want a:2 on a new session (4 opened)", got, opened())
	}
	if got := ask(t, c1, "x"); got != "a:x" {
		t.Errorf("client 1 got %q, want a:x", got)
	}
	if got := value(h.p.evicted.WithLabelValues("dns")); got != 2 {
		t.Errorf("%v evicted, want 2", got)
	}
	if got := value(h.p.open.WithLabelValues("dns")); got != 2 {
		t.Errorf("open gauge %v, want 2", got)
	}
}

// Without a route for the listener datagrams are dropped.
func TestNoRouteDrops(t *testing.T) {
	h := newHarness(t, config.UDP{}, nil, echoBackend(t, "a"))
	h.r.Update(config.SourceUpdate{Source: config.SourceAPI})
	if got := ask(t, h.client(), "x"); got != "" {
		t.Errorf("got %q without a route, want nothing", got)
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
