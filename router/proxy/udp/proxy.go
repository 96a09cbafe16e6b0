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
//   - A listener holds at most Options.MaxSessions sessions
//     (config.MaxUDPSessions by default): a datagram from a new client
//     beyond it is dropped and counted, so a flood of source addresses
//     bounds the memory and sockets Levee spends.
//   - Datagrams with no route, no backend up, or whose backend socket
//     cannot be opened are dropped and counted: UDP has no refusal to send.
package udp

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
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
	// MaxSessions bounds the sessions of one listener; zero is
	// config.MaxUDPSessions.
	MaxSessions int
	// Now is the clock of idle expiry; nil is time.Now.
	Now func() time.Time
	// Dial opens the socket toward a backend; nil is net.Dial("udp", …).
	Dial func(addr string) (net.Conn, error)
}

// Outcomes of a client's first datagram, the outcome label of
// levee_udp_sessions_total.
const (
	OutcomeOpened     = "opened"
	OutcomeNoRoute    = "no_route"
	OutcomeLimit      = "limit"
	OutcomeNoBackend  = "no_backend"
	OutcomeDialFailed = "dial_failed"
)

// Proxy relays the datagrams of UDP routes (see the package doc).
type Proxy struct {
	opts     Options
	log      zerolog.Logger
	sessions *prometheus.CounterVec
	open     *prometheus.GaugeVec
	expired  *prometheus.CounterVec
}

// New returns a Proxy.
func New(opts Options) *Proxy {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = config.MaxUDPSessions
	}
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
			Help: "First datagrams of UDP clients, by listener, route (empty without one) and outcome (opened, no_route, limit, no_backend, dial_failed); all but opened are dropped.",
		}, []string{"listener", "route", "outcome"}),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "levee_udp_sessions_open",
			Help: "UDP sessions open now, by listener.",
		}, []string{"listener"}),
		expired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_udp_sessions_expired_total",
			Help: "UDP sessions ended after their route's udp.idleTimeout without a datagram, by listener.",
		}, []string{"listener"}),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(p.sessions, p.open, p.expired)
	}
	return p
}

// Listener serves one UDP socket: its session table.
type Listener struct {
	p    *Proxy
	name string
	pc   net.PacketConn

	mu       sync.Mutex
	sessions map[string]*session // by client address
	closed   bool
}

type session struct {
	client net.Addr
	back   net.Conn
	route  string
	idle   time.Duration
	last   time.Time // guarded by Listener.mu
}

// Listen returns the session table of pc, a UDP socket named listener;
// Serve runs it.
func (p *Proxy) Listen(pc net.PacketConn, listener string) *Listener {
	return &Listener{p: p, name: listener, pc: pc, sessions: map[string]*session{}}
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
	if _, err := s.back.Write(b); err != nil {
		l.p.log.Debug().Str("listener", l.name).Str("route", s.route).Str("client", from.String()).Err(err).Msg("udp datagram to backend failed")
	}
}

// session returns from's session, opening one; nil drops the datagram.
func (l *Listener) session(from net.Addr) *session {
	key := from.String()
	now := l.p.opts.Now()
	l.mu.Lock()
	if s := l.sessions[key]; s != nil {
		s.last = now
		l.mu.Unlock()
		return s
	}
	full := len(l.sessions) >= l.p.opts.MaxSessions
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return nil
	}
	rt := l.p.opts.Snapshot().MatchUDP(l.name)
	if rt == nil {
		l.p.sessions.WithLabelValues(l.name, "", OutcomeNoRoute).Inc()
		return nil
	}
	id := rt.ID()
	if full {
		l.p.sessions.WithLabelValues(l.name, id, OutcomeLimit).Inc()
		return nil
	}
	addr := pick(rt)
	if addr == "" {
		l.p.sessions.WithLabelValues(l.name, id, OutcomeNoBackend).Inc()
		return nil
	}
	back, err := l.p.opts.Dial(addr)
	if err != nil {
		l.p.sessions.WithLabelValues(l.name, id, OutcomeDialFailed).Inc()
		l.p.log.Warn().Str("listener", l.name).Str("route", id).Str("backend", addr).Err(err).Msg("udp backend socket failed")
		return nil
	}
	idle := rt.Config().UDP.IdleTimeout
	if idle <= 0 {
		idle = config.DefaultUDPIdleTimeout
	}
	s := &session{client: from, back: back, route: id, idle: idle, last: now}
	l.mu.Lock()
	if l.closed || l.sessions[key] != nil || len(l.sessions) >= l.p.opts.MaxSessions {
		// Closed, or another datagram of the client (or of a new one)
		// won the race: this one is dropped, as UDP may.
		l.mu.Unlock()
		_ = back.Close()
		return nil
	}
	l.sessions[key] = s
	l.mu.Unlock()
	l.p.sessions.WithLabelValues(l.name, id, OutcomeOpened).Inc()
	l.p.open.WithLabelValues(l.name).Inc()
	go l.replies(key, s)
	return s
}

// replies relays the backend's datagrams of session s to its client until
// the session's socket is closed.
func (l *Listener) replies(key string, s *session) {
	buf := make([]byte, maxDatagram)
	for {
		n, err := s.back.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Closed by Sweep or Close, or an ICMP port unreachable
			// (ECONNREFUSED on a connected socket): the session ends.
			l.end(key, s)
			return
		}
		l.mu.Lock()
		s.last = l.p.opts.Now()
		l.mu.Unlock()
		if _, err := l.pc.WriteTo(buf[:n], s.client); err != nil {
			l.p.log.Debug().Str("listener", l.name).Str("client", s.client.String()).Err(err).Msg("udp reply to client failed")
		}
	}
}

// end removes session s (if it is still key's) and closes its socket.
func (l *Listener) end(key string, s *session) {
	l.mu.Lock()
	mine := l.sessions[key] == s
	if mine {
		delete(l.sessions, key)
	}
	l.mu.Unlock()
	_ = s.back.Close()
	if mine {
		l.p.open.WithLabelValues(l.name).Dec()
	}
}

// Sweep ends the sessions idle for their route's udp.idleTimeout.
func (l *Listener) Sweep() {
	now := l.p.opts.Now()
	var idle []*session
	var keys []string
	l.mu.Lock()
	for k, s := range l.sessions {
		if now.Sub(s.last) >= s.idle {
			idle = append(idle, s)
			keys = append(keys, k)
		}
	}
	l.mu.Unlock()
	for i, s := range idle {
		l.end(keys[i], s)
		l.p.expired.WithLabelValues(l.name).Inc()
	}
}

// Sessions returns how many sessions are open.
func (l *Listener) Sessions() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions)
}

// Close ends every session and stops opening new ones; it does not close
// the socket (its owner does, which ends Serve).
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	all := make(map[string]*session, len(l.sessions))
	for k, s := range l.sessions {
		all[k] = s
	}
	l.mu.Unlock()
	for k, s := range all {
		l.end(k, s)
	}
	return nil
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
