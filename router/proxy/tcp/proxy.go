package tcp

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// Options configure a Proxy.
type Options struct {
	// Snapshot returns the router's current snapshot (Router.Snapshot).
	// Required.
	Snapshot func() *router.Snapshot
	// Logger receives refusals and relay errors.
	Logger zerolog.Logger
	// Registerer receives the metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// Dial opens a backend connection; nil uses net.Dialer. The context
	// carries the connect timeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS is the server configuration (certificates) with which TCP
	// routes with tls=terminate complete the handshake; nil refuses their
	// connections.
	TLS *tls.Config
	// NoSplice keeps every relay on the buffered copy: splice(2) is not
	// used even between plain TCP connections (splice.go). For measuring
	// one against the other.
	NoSplice bool
}

// Outcomes of a client connection, the outcome label of
// levee_tcp_connections_total.
const (
	OutcomeRelayed       = "relayed"
	OutcomeNoRoute       = "no_route"
	OutcomeLimit         = "limit"
	OutcomeCircuitOpen   = "circuit_open"
	OutcomeNoBackend     = "no_backend"
	OutcomeConnectFailed = "connect_failed"
	// OutcomeHandshake: a tls=terminate route's handshake failed.
	OutcomeHandshake = "tls_handshake"
)

// Proxy relays the connections of TCP routes (see the package doc).
type Proxy struct {
	opts    Options
	log     zerolog.Logger
	termTLS *tls.Config   // Options.TLS without ALPN
	splice  *spliceSwitch // nil with Options.NoSplice
	bufs    *buffers      // the relays' copy buffers

	conns  *prometheus.CounterVec
	open   *prometheus.GaugeVec
	counts sync.Map // route id -> *atomic.Int64: open client connections

	mu      sync.Mutex
	clients map[net.Conn]struct{} // being handled
	idle    chan struct{}         // closed when clients empties; nil when nobody waits
}

// New returns a Proxy.
func New(opts Options) *Proxy {
	if opts.Dial == nil {
		var d net.Dialer
		opts.Dial = d.DialContext
	}
	p := &Proxy{
		opts: opts,
		log:  opts.Logger.With().Str("component", "tcp").Logger(),
		conns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_tcp_connections_total",
			Help: "Client connections of TCP routes, by listener, route (empty without one) and outcome (relayed, no_route, limit, circuit_open, no_backend, connect_failed, tls_handshake).",
		}, []string{"listener", "route", "outcome"}),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "levee_tcp_connections_open",
			Help: "Client connections of TCP routes open now, by route.",
		}, []string{"route"}),
		clients: map[net.Conn]struct{}{},
		bufs:    newBuffers(),
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(p.conns, p.open)
	}
	if !opts.NoSplice {
		p.splice = &spliceSwitch{}
	}
	if opts.TLS != nil {
		// A terminated TCP route speaks no HTTP: no ALPN protocol is
		// offered (RFC 7301 3.2: the server then selects none).
		p.termTLS = opts.TLS.Clone()
		p.termTLS.NextProtos = nil
	}
	return p
}

// Handle serves one client connection on listener, whose ClientHello
// named sni ("" on a plain TCP listener), and closes it.
func (p *Proxy) Handle(c net.Conn, listener, sni string) {
	p.track(c, true)
	defer p.track(c, false)
	defer c.Close()
	rt := p.opts.Snapshot().MatchTCP(listener, sni)
	if rt == nil {
		p.refuse(listener, "", OutcomeNoRoute, c, nil)
		return
	}
	id := rt.ID()
	cfg := rt.Config().TCP
	n := p.count(id)
	if v := n.Add(1); cfg.MaxConnections > 0 && v > int64(cfg.MaxConnections) {
		n.Add(-1)
		p.refuse(listener, id, OutcomeLimit, c, nil)
		return
	}
	defer n.Add(-1)
	tok, ok := p.admit(rt, listener, c)
	if !ok {
		return
	}
	back, outcome := p.connect(rt, cfg)
	if back == nil {
		tok.Report(breaker.Outcome{Result: outcome})
		why := OutcomeConnectFailed
		if outcome == breaker.Neutral {
			why = OutcomeNoBackend
		}
		p.refuse(listener, id, why, c, nil)
		return
	}
	defer back.Close()
	if err := sendProxyHeader(back, c, cfg.ProxyProtocol); err != nil {
		tok.Report(breaker.Outcome{Result: breaker.Failure})
		p.refuse(listener, id, OutcomeConnectFailed, c, err)
		return
	}
	p.conns.WithLabelValues(listener, id, OutcomeRelayed).Inc()
	g := p.open.WithLabelValues(id)
	g.Inc()
	defer g.Dec()
	start := time.Now()
	res := relay(c, back, idleOf(cfg), p.splice, p.bufs)
	tok.Report(breaker.Outcome{Result: res.verdict(), Elapsed: time.Since(start)})
}

// admit asks the route's breaker; an open one closes the connection at
// once and says why.
func (p *Proxy) admit(rt *router.Route, listener string, c net.Conn) (breaker.Token, bool) {
	tok, ok := rt.State().AdmitConnection()
	if !ok {
		p.refuse(listener, rt.ID(), OutcomeCircuitOpen, c, nil)
	}
	return tok, ok
}

// connect dials the route's backends in round-robin order, each once,
// until one answers. The outcome is Failure when every dial failed,
// Neutral when there was no backend to dial.
func (p *Proxy) connect(rt *router.Route, cfg config.TCP) (net.Conn, breaker.Result) {
	bs := rt.Backends()
	if len(bs) == 0 {
		return nil, breaker.Neutral
	}
	start := int(rt.State().Balancer().Next() % uint32(len(bs)))
	timeout := cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = config.DefaultTCPConnectTimeout
	}
	tried := false
	for i := range bs {
		b := bs[(start+i)%len(bs)]
		if b.Weight() <= 0 || b.State().Down() {
			continue
		}
		tried = true
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		c, err := p.opts.Dial(ctx, "tcp", b.HostPort())
		cancel()
		if err == nil {
			return c, breaker.Success
		}
		p.log.Warn().Str("route", rt.ID()).Str("backend", b.HostPort()).Dur("connect_timeout", timeout).Err(err).Msg("tcp backend connect failed")
	}
	if !tried {
		return nil, breaker.Neutral
	}
	return nil, breaker.Failure
}

// refuse counts and logs a connection closed without a relay.
func (p *Proxy) refuse(listener, route, outcome string, c net.Conn, err error) {
	p.conns.WithLabelValues(listener, route, outcome).Inc()
	ev := p.log.Info()
	if outcome == OutcomeConnectFailed || outcome == OutcomeCircuitOpen {
		ev = p.log.Warn()
	}
	ev.Str("listener", listener).Str("route", route).Str("outcome", outcome).Str("client", c.RemoteAddr().String()).Err(err).Msg("tcp connection refused")
}

func (p *Proxy) count(id string) *atomic.Int64 {
	if v, ok := p.counts.Load(id); ok {
		return v.(*atomic.Int64)
	}
	v, _ := p.counts.LoadOrStore(id, new(atomic.Int64))
	return v.(*atomic.Int64)
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.clients[c] = struct{}{}
		return
	}
	delete(p.clients, c)
	if len(p.clients) == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
}

// Shutdown waits for the connections being handled to end, until ctx is
// done; then it closes those left and returns ctx's error.
func (p *Proxy) Shutdown(ctx context.Context) error {
	for {
		p.mu.Lock()
		if len(p.clients) == 0 {
			p.mu.Unlock()
			return nil
		}
		if p.idle == nil {
			p.idle = make(chan struct{})
		}
		idle := p.idle
		p.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			_ = p.Close()
			return ctx.Err()
		}
	}
}

// Close closes every client connection being relayed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.clients {
		_ = c.Close()
	}
	return nil
}

func idleOf(cfg config.TCP) time.Duration {
	if cfg.IdleTimeout > 0 {
		return cfg.IdleTimeout
	}
	return config.DefaultTCPIdleTimeout
}

// Serve accepts connections on ln, a TCP listener named listener, and
// handles each in its own goroutine, until ln is closed (then it returns
// net.ErrClosed).
func (p *Proxy) Serve(ln net.Listener, listener string) error {
	var pause time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				// Out of file descriptors is temporary, as net/http has it.
				pause = min(max(2*pause, 5*time.Millisecond), time.Second)
				time.Sleep(pause)
				continue
			}
			return err
		}
		pause = 0
		go p.Handle(c, listener, "")
	}
}
