// Package udp is the data path of UDP routes: it reads the datagrams of a
// UDP listener, keeps a session per client address, and relays datagrams
// both ways between the client and one backend of the listener's route.
//
// The model:
//
//   - A session is a client address (IP and port) and the backend it was
//     given, with a connected socket of Levee's toward that backend. The
//     first datagram from a new client address opens one: the route is
//     the listener's (Snapshot.MatchUDP), the backend the next up one in
//     round-robin order. Every later datagram from that address goes to
//     the same backend; every datagram the backend sends back on that
//     socket goes to that client, so replies never cross between clients.
//   - A session ends when no datagram moved either way for the route's
//     udp.idleTimeout; the next datagram from the address opens a new one.
//   - A listener holds at most the route's udp.maxSessions sessions: a
//     new client beyond it takes the place of the least recently active
//     session (the table is kept in order of activity), which ends and is
//     counted. A flood of source addresses bounds the memory and sockets
//     Levee spends, and the clients that keep talking keep their sessions.
//   - The route's breaker (breaker.go) admits a session when it opens and
//     is told one outcome per session: its backend's first datagram back
//     is a success; an ICMP port unreachable (ECONNREFUSED on the
//     connected socket) or, with udp.circuitBreaker.answerTimeout, no
//     datagram back within it after a client's datagram, is a failure and
//     ends the session. While the breaker is open a new client's
//     datagrams are dropped; sessions already open keep relaying.
//   - Datagrams with no route, no backend up, or whose backend socket
//     cannot be opened are dropped and counted: UDP has no refusal to send.
package udp

import (
	"errors"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
)

// maxDatagram is the largest UDP payload (RFC 768: a 16-bit length, less
// the IPv4 and UDP headers).
const maxDatagram = 65507

// Options configure a Proxy.
type Options struct {
	// Snapshot returns the router's current snapshot. Required.
	Snapshot func() *router.Snapshot
	// Logger receives session errors.
	Logger zerolog.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// Now is the clock of idle expiry; nil is time.Now. The answer
	// timeout is a read deadline of the backend socket, on the system's
	// clock.
	Now func() time.Time
	// Dial opens the socket toward a backend; nil is net.Dial("udp", …).
	Dial func(addr string) (net.Conn, error)
}

// Outcomes of a client's first datagram, the outcome label of
// levee_udp_sessions_total.
const (
	OutcomeOpened      = "opened"
	OutcomeNoRoute     = "no_route"
	OutcomeCircuitOpen = "circuit_open"
	OutcomeNoBackend   = "no_backend"
	OutcomeDialFailed  = "dial_failed"
)

// Reasons a session failed, the reason label of
// levee_udp_session_failures_total.
const (
	// ReasonRefused: the backend answered a datagram with ICMP port
	// unreachable (ECONNREFUSED on the connected socket).
	ReasonRefused = "refused"
	// ReasonNoAnswer: nothing came back within the route's
	// udp.circuitBreaker.answerTimeout after a client's datagram.
	ReasonNoAnswer = "no_answer"
)

// Proxy relays the datagrams of UDP routes (see the package doc).
type Proxy struct {
	opts     Options
	log      zerolog.Logger
	sessions *prometheus.CounterVec
	open     *prometheus.GaugeVec
	expired  *prometheus.CounterVec
	evicted  *prometheus.CounterVec
	failures *prometheus.CounterVec
}

// New returns a Proxy.
func New(opts Options) *Proxy {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Dial == nil {
		opts.Dial = func(addr string) (net.Conn, error) { return net.Dial("udp", addr) }
	}
	p := &Proxy{
		opts: opts,
		log:  opts.Logger.With().Str("component", "udp").Logger(),
		sessions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_udp_sessions_total",
			Help: "First datagrams of UDP clients, by listener, route (empty without one) and outcome (opened, no_route, circuit_open, no_backend, dial_failed); all but opened are dropped.",
		}, []string{"listener", "route", "outcome"}),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "levee_udp_sessions_open",
			Help: "UDP sessions open now, by listener.",
		}, []string{"listener"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_udp_sessions_expired_total",
			Help: "UDP sessions ended after their route's udp.idleTimeout without a datagram, by listener.",
		}, []string{"listener"}),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_udp_sessions_evicted_total",
			Help: "UDP sessions ended to make room for a new client's when the listener held udp.maxSessions, the least recently active first, by listener.",
		}, []string{"listener"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_udp_session_failures_total",
			Help: "UDP sessions ended by a backend failure, by listener, route and reason (refused: ICMP port unreachable; no_answer: nothing back within udp.circuitBreaker.answerTimeout).",
		}, []string{"listener", "route", "reason"}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(p.sessions, p.open, p.expired, p.evicted, p.failures)
	}
	return p
}

// Serve reads pc's datagrams and relays them until pc is closed (then it
// closes every session and returns net.ErrClosed). A sweep ends idle
// sessions every second.
func (l *Listener) Serve() error {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.Sweep()
			case <-stop:
				return
			}
		}
	}()
	defer l.Close()
	buf := make([]byte, maxDatagram)
	for {
		n, from, err := l.pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			var te interface{ Timeout() bool }
			if errors.As(err, &te) && te.Timeout() {
				continue
			}
			return err
		}
		l.forward(buf[:n], from)
	}
}

// forward sends one client datagram to its session's backend, opening
// the session if the client has none.
func (l *Listener) forward(b []byte, from net.Addr) {
	s := l.session(from)
	if s == nil {
		return
	}
	l.awaitAnswer(s)
	if _, err := s.back.Write(b); err != nil {
		if isRefused(err) {
			l.fail(s, ReasonRefused)
			return
		}
		l.p.log.Debug().Str("listener", l.name).Str("route", s.route).Str("client", from.String()).Err(err).Msg("udp datagram to backend failed")
	}
}

// replies relays the backend's datagrams of session s to its client until
// the session's socket is closed, or the backend fails.
func (l *Listener) replies(s *session) {
	buf := make([]byte, maxDatagram)
	for {
		n, err := s.back.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if l.answerDue(s) {
					l.fail(s, ReasonNoAnswer)
					return
				}
				continue
			}
			if isRefused(err) {
				l.fail(s, ReasonRefused)
				return
			}
			// Closed by Sweep, an eviction or Close: the session ends.
			l.end(s)
			return
		}
		l.answered(s)
		if _, err := l.pc.WriteTo(buf[:n], s.client); err != nil {
			l.p.log.Debug().Str("listener", l.name).Str("client", s.client.String()).Err(err).Msg("udp reply to client failed")
		}
	}
}

// pick returns the next backend of rt in round-robin order that is up
// and has a weight, "" when none is.
func pick(rt *router.Route) string {
	bs := rt.Backends()
	if len(bs) == 0 {
		return ""
	}
	start := int(rt.State().Balancer().Next() % uint32(len(bs)))
	for i := range bs {
		b := bs[(start+i)%len(bs)]
		if b.Weight() > 0 && !b.State().Down() {
			return b.HostPort()
		}
	}
	return ""
}
