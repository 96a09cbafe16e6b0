// Package h3 serves HTTP/3 (RFC 9114) over QUIC (RFC 9000) with
// github.com/quic-go/quic-go, beside a TLS listener's HTTP/1.1 and
// HTTP/2 on the same port number: TCP carries those, UDP carries QUIC.
//
// The model: a Server owns one UDP socket, speaks QUIC with the TLS
// configuration the TCP listener uses (its certificates, ALPN set to h3),
// and hands every request to the same http.Handler the TCP listener
// serves. It knows nothing of routes. Clients learn of it from the
// Alt-Svc header (RFC 7838) that AltSvc adds to the TCP listener's
// answers; a browser then moves to HTTP/3 for later requests, and falls
// back to TCP by itself when UDP is blocked.
//
// Every wait is bounded (Options): the handshake, an idle connection,
// the concurrent streams a client may open, the size of a request head,
// and the connections a listener holds. 0-RTT is accepted only when
// Options.Allow0RTT says so: early data can be replayed by anyone who saw
// it (RFC 8446 8, RFC 9001 9.2), so a request that arrived in it is
// marked (Early) and the handler decides whether to serve it before the
// handshake completes (RFC 8470).
package h3

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// Defaults of the limits Options leaves at zero.
const (
	// DefaultHandshakeTimeout bounds a QUIC handshake (quic-go's
	// HandshakeIdleTimeout: no packet for this long, or twice this long
	// in all, aborts it).
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a connection with no packet (QUIC's
	// max_idle_timeout, RFC 9000 10.1) and one with no request in
	// progress for this long.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxStreams is the concurrent requests one connection may
	// have (QUIC's initial_max_streams_bidi; RFC 9114 6.1 asks for at
	// least 100).
	DefaultMaxStreams = 100
	// DefaultMaxHeaderBytes bounds a request's header section
	// (SETTINGS_MAX_FIELD_SECTION_SIZE, RFC 9114 7.2.4.1): past it, 431.
	DefaultMaxHeaderBytes = 1 << 20
	// AltSvcMaxAge is how long a client may remember the Alt-Svc
	// advertisement ("ma", RFC 7838 3.1): a day, so that turning HTTP/3
	// off is noticed within one.
	AltSvcMaxAge = 24 * time.Hour
)

// maxUniStreams bounds the unidirectional streams a client may open: it
// needs three (control, QPACK encoder and decoder, RFC 9114 6.2); a few
// more leave room for the stream types clients reserve to grease.
const maxUniStreams = 16

// Options configure a Server.
type Options struct {
	// Handler serves every request, as it does over TCP.
	Handler http.Handler
	// TLS is the TCP listener's configuration; a clone offering only h3
	// in ALPN is used. QUIC requires TLS 1.3 (RFC 9001 4.2).
	TLS *tls.Config
	// ConnContext derives a connection's context, the base of its
	// requests' (the listener's identity, for one). Nil: unchanged.
	ConnContext func(context.Context) context.Context
	// PublicPort is the UDP port clients reach, advertised in Alt-Svc.
	// Zero: the socket's own port.
	PublicPort int

	HandshakeTimeout time.Duration // zero: DefaultHandshakeTimeout
	IdleTimeout      time.Duration // zero: DefaultIdleTimeout
	MaxStreams       int64         // zero: DefaultMaxStreams
	MaxHeaderBytes   int           // zero: DefaultMaxHeaderBytes
	// MaxConns bounds the QUIC connections open at once; past it a new
	// one is refused (CONNECTION_REFUSED) and OnRefused is called. Zero:
	// unbounded.
	MaxConns  int
	OnRefused func()
	// Allow0RTT accepts early data from resumed clients; Early tells a
	// handler which requests arrived in it. False: never (the default).
	Allow0RTT bool
}

// Server serves HTTP/3 on one UDP socket.
type Server struct {
	srv    *http3.Server
	tr     *quic.Transport
	ln     http3.QUICListener
	altSvc string
	conns  atomic.Int64
}

// Listen starts QUIC on pc: handshakes are answered from now on, and
// requests are served once Serve runs. The Server owns pc and closes it.
func Listen(pc net.PacketConn, o Options) (*Server, error) {
	if o.TLS == nil {
		return nil, errors.New("h3: no TLS configuration")
	}
	port := o.PublicPort
	if port == 0 {
		_, p, err := net.SplitHostPort(pc.LocalAddr().String())
		if err != nil {
			return nil, fmt.Errorf("h3: port of %s: %w", pc.LocalAddr(), err)
		}
		port, _ = strconv.Atoi(p)
	}
	s := &Server{altSvc: AltSvcValue(port, AltSvcMaxAge)}
	s.srv = &http3.Server{
		Handler:        o.Handler,
		MaxHeaderBytes: orDefault(o.MaxHeaderBytes, DefaultMaxHeaderBytes),
		IdleTimeout:    orDefault(o.IdleTimeout, DefaultIdleTimeout),
		Port:           port,
	}
	s.srv.ConnContext = connContext(o.ConnContext, o.Allow0RTT)
	s.tr = &quic.Transport{Conn: pc, ConnContext: s.admit(o.MaxConns, o.OnRefused)}
	tlsConf, quicConf := http3.ConfigureTLSConfig(o.TLS), &quic.Config{
		HandshakeIdleTimeout:  orDefault(o.HandshakeTimeout, DefaultHandshakeTimeout),
		MaxIdleTimeout:        orDefault(o.IdleTimeout, DefaultIdleTimeout),
		MaxIncomingStreams:    orDefault(o.MaxStreams, DefaultMaxStreams),
		MaxIncomingUniStreams: maxUniStreams,
		Allow0RTT:             o.Allow0RTT, // replayable (see the package doc)
	}
	var ln http3.QUICListener
	var err error
	if o.Allow0RTT {
		// An early listener hands over connections before the handshake
		// completes, so that their 0-RTT requests are served at once.
		ln, err = s.tr.ListenEarly(tlsConf, quicConf)
	} else {
		ln, err = s.tr.Listen(tlsConf, quicConf)
	}
	if err != nil {
		_ = s.tr.Close()
		_ = pc.Close()
		return nil, fmt.Errorf("h3: QUIC on %s: %w", pc.LocalAddr(), err)
	}
	s.ln = ln
	return s, nil
}

// connKey keys a connection in its requests' contexts.
type connKey struct{}

// connContext derives a connection's context: base's, with the connection
// itself when 0-RTT is accepted, for Early.
func connContext(base func(context.Context) context.Context, allow0RTT bool) func(context.Context, *quic.Conn) context.Context {
	return func(ctx context.Context, c *quic.Conn) context.Context {
		if base != nil {
			ctx = base(ctx)
		}
		if allow0RTT {
			ctx = context.WithValue(ctx, connKey{}, c)
		}
		return ctx
	}
}

// Early reports whether r arrived in 0-RTT data on a connection whose
// handshake has not completed yet: such a request may be a replay (RFC
// 8470 5.2). The channel closes when the handshake completes (or the
// connection fails first: then it never closes and r's context ends).
// Requests over TCP, and any on a listener without Allow0RTT, are never
// early.
func Early(r *http.Request) (<-chan struct{}, bool) {
	if r.ProtoMajor != 3 || (r.TLS != nil && r.TLS.HandshakeComplete) {
		return nil, false
	}
	c, ok := r.Context().Value(connKey{}).(*quic.Conn)
	if !ok {
		return nil, false
	}
	done := c.HandshakeComplete()
	select {
	case <-done:
		return nil, false
	default:
		return done, true
	}
}

// admit is the transport's ConnContext: it counts the connections and
// refuses one past max. A connection's context ends when it closes, or
// when its handshake fails.
func (s *Server) admit(max int, onRefused func()) func(context.Context, *quic.ClientInfo) (context.Context, error) {
	return func(ctx context.Context, _ *quic.ClientInfo) (context.Context, error) {
		if n := s.conns.Add(1); max > 0 && n > int64(max) {
			s.conns.Add(-1)
			if onRefused != nil {
				onRefused()
			}
			return nil, fmt.Errorf("h3: %d connections open, the most allowed", max)
		}
		context.AfterFunc(ctx, func() { s.conns.Add(-1) })
		return ctx, nil
	}
}

// Conns is the number of QUIC connections open (handshakes included).
func (s *Server) Conns() int64 { return s.conns.Load() }

// Addr is the UDP address served.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve serves requests until Shutdown or Close, then returns
// http.ErrServerClosed.
func (s *Server) Serve() error {
	err := s.srv.ServeListener(s.ln)
	if errors.Is(err, quic.ErrServerClosed) {
		return http.ErrServerClosed
	}
	return err
}

// Shutdown stops accepting connections, sends GOAWAY (RFC 9114 5.2) on
// the open ones and waits until their requests in progress are done or
// ctx ends; then every connection is closed, and the socket.
func (s *Server) Shutdown(ctx context.Context) error {
	_ = s.ln.Close() // handshakes in flight are refused
	err := s.srv.Shutdown(ctx)
	return errors.Join(err, s.closeTransport())
}

// Close closes every connection (H3_NO_ERROR) and the socket at once.
func (s *Server) Close() error {
	_ = s.ln.Close()
	err := s.srv.Close()
	return errors.Join(err, s.closeTransport())
}

func (s *Server) closeTransport() error {
	err := s.tr.Close()
	if cerr := s.tr.Conn.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
		err = errors.Join(err, cerr)
	}
	return err
}

// AltSvc wraps the TCP listener's handler: its answers advertise this
// server (RFC 7838 3). Requests that came over HTTP/3 already are passed
// through unchanged.
func (s *Server) AltSvc(next http.Handler) http.Handler {
	value := []string{s.altSvc}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor < 3 {
			w.Header()["Alt-Svc"] = value
		}
		next.ServeHTTP(w, r)
	})
}

// AltSvcValue is the Alt-Svc field value advertising HTTP/3 on port of
// the same host, remembered for maxAge: h3=":443"; ma=86400.
func AltSvcValue(port int, maxAge time.Duration) string {
	return `h3=":` + strconv.Itoa(port) + `"; ma=` + strconv.FormatInt(int64(maxAge/time.Second), 10)
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
