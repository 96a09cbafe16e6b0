package front

import (
	"context"
	"crypto/tls"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/levee-proxy/levee/router/httpx/h2guard"
	"github.com/levee-proxy/levee/router/httpx/server"
)

// Limits are a listener's bounds, applied by every server choice alike.
type Limits struct {
	// HeaderTimeout bounds a request head from its first byte, and the
	// TLS handshake (as net/http bounds both by ReadHeaderTimeout).
	HeaderTimeout time.Duration
	// IdleTimeout bounds the wait for the next request on a kept-alive
	// connection (HTTP/1.1) and an HTTP/2 connection without streams.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request head's size.
	MaxHeaderBytes int
	// WriteTimeout bounds the held end of an answer on TLS
	// (tlsmux.Options.HeldWriteTimeout), and every write of an HTTP/2
	// connection, h2c or TLS (http2.Server.WriteByteTimeout): a client
	// that stops reading the connection altogether blocks the server's
	// one writer, which a stream's write deadline does not end.
	WriteTimeout time.Duration
}

// Options configure a listener's servers.
type Options struct {
	// Handler answers every request.
	Handler http.Handler
	// Base is the requests' base context: it carries what the request
	// path learns of the listener.
	Base   context.Context
	Limits Limits
	// Stdlib serves HTTP/1.1 with net/http's server instead of Levee's.
	Stdlib bool
	// RefusalHeader is added to the answers Levee's HTTP/1.1 server
	// gives on its own (server.Server.RefusalHeader).
	RefusalHeader http.Header
	// ErrorLog receives the servers' errors (handshakes, panics, cuts).
	ErrorLog *stdlog.Logger
	// OnFloodCut, if set, is called when h2guard cuts an HTTP/2
	// connection, with the flooded frame type's name ("unknown" for
	// undefined types): a metric's label.
	OnFloodCut func(frame string)
}

// Server is what a listener's owner runs and stops: net/http's server
// and router/httpx/server's are both one.
type Server interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

func (o Options) base() context.Context {
	if o.Base == nil {
		return context.Background()
	}
	return o.Base
}

// baseContext is net/http's BaseContext for o.
func (o Options) baseContext() func(net.Listener) context.Context {
	ctx := o.base()
	return func(net.Listener) context.Context { return ctx }
}

// Plain returns a plain listener's HTTP/1.1 server (for H2C beside it,
// wrap the listener with H2C).
func Plain(o Options) Server {
	if o.Stdlib {
		return &http.Server{
			Handler:           o.Handler,
			ReadHeaderTimeout: o.Limits.HeaderTimeout,
			IdleTimeout:       o.Limits.IdleTimeout,
			MaxHeaderBytes:    o.Limits.MaxHeaderBytes,
			ErrorLog:          o.ErrorLog,
			BaseContext:       o.baseContext(),
		}
	}
	srv := leveeServer(o)
	srv.BaseContext = o.baseContext()
	return srv
}

// leveeServer is Levee's own HTTP/1.1 server with o's limits.
func leveeServer(o Options) *server.Server {
	return &server.Server{
		RefusalHeader:     o.RefusalHeader,
		Handler:           o.Handler,
		ReadHeaderTimeout: o.Limits.HeaderTimeout,
		IdleTimeout:       o.Limits.IdleTimeout,
		MaxHeaderBytes:    o.Limits.MaxHeaderBytes,
		ErrorLog:          o.ErrorLog,
	}
}

// TLS returns a TLS listener's server for cfg: Levee's own HTTP/1.1
// server beside net/http's HTTP/2 server, split by ALPN, or with Stdlib
// net/http's server for both.
func TLS(o Options, cfg *tls.Config) Server {
	if !o.Stdlib {
		return newSplitTLSServer(o, cfg)
	}
	srv := &http.Server{
		Handler:   o.Handler,
		TLSConfig: cfg,
		// net/http bounds the TLS handshake by ReadHeaderTimeout too.
		ReadHeaderTimeout: o.Limits.HeaderTimeout,
		IdleTimeout:       o.Limits.IdleTimeout,
		MaxHeaderBytes:    o.Limits.MaxHeaderBytes,
		ErrorLog:          o.ErrorLog,
		BaseContext:       o.baseContext(),
		HTTP2:             o.http2Config(),
	}
	if err := guardStdlibH2(srv, o); err != nil {
		// The TLS policy has what HTTP/2 requires; without it, HTTP/2
		// is not offered rather than served unguarded.
		o.logf("http2: not served: %v", err)
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	return tlsServer{srv}
}

// tlsServer serves TLS on a plain net.Listener (ServeTLS with the
// certificates of TLSConfig).
type tlsServer struct{ *http.Server }

func (s tlsServer) Serve(ln net.Listener) error { return s.ServeTLS(ln, "", "") }

func (o Options) logf(format string, args ...any) {
	if o.ErrorLog != nil {
		o.ErrorLog.Printf(format, args...)
		return
	}
	stdlog.Printf(format, args...)
}

// http2Config is the HTTP/2 configuration of every HTTP/2 listener (h2c,
// and TLS with either server choice), set on the http.Server the HTTP/2
// server takes its configuration from: a connection on which no byte
// could be written for Limits.WriteTimeout is closed. A stream's write
// deadline resets that stream only, and its RST_STREAM, like every other
// frame, waits for the connection's one writer, which a client that reads
// nothing holds for ever.
func (o Options) http2Config() *http.HTTP2Config {
	return &http.HTTP2Config{WriteByteTimeout: o.Limits.WriteTimeout}
}

// h2Base is the net/http server whose settings the HTTP/2 server takes
// (http2.ConfigureServer, ServeConnOpts.BaseConfig): the handler, the
// header and idle limits, the error log and the write timeout above.
func (o Options) h2Base() *http.Server {
	return &http.Server{
		Handler:           o.Handler,
		ReadHeaderTimeout: o.Limits.HeaderTimeout,
		IdleTimeout:       o.Limits.IdleTimeout,
		MaxHeaderBytes:    o.Limits.MaxHeaderBytes,
		ErrorLog:          o.ErrorLog,
		HTTP2:             o.http2Config(),
	}
}

// floodGuard is h2guard's options for a connection from remote: a cut is
// logged and counted.
func (o Options) floodGuard(remote string) h2guard.Options {
	return h2guard.Options{OnFlood: func(frameType uint8) {
		name := h2guard.FrameName(frameType)
		o.logf("http2: connection from %s cut: %s frames past its budget (ENHANCE_YOUR_CALM)", remote, name)
		if strings.HasPrefix(name, "0x") {
			name = "unknown"
		}
		if o.OnFloodCut != nil {
			o.OnFloodCut(name)
		}
	}}
}
