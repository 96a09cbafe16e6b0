//lint:file-ignore SA1019 HTTP/2 is served by x/net/http2.Server (ServeConn, ConfigureServer) until it moves to net/http's own HTTP/2 support (http.Server.Protocols); the h2guard budget and the h2spec results are tied to this server

package front

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"

	"golang.org/x/net/http2"

	"github.com/levee-proxy/levee/router/httpx/h2guard"
	"github.com/levee-proxy/levee/router/httpx/server"
	"github.com/levee-proxy/levee/router/httpx/tlsmux"
)

// splitTLSServer serves a TLS listener with Levee's own HTTP/1.1 server
// for the connections that chose HTTP/1.1 (or no ALPN), and net/http's
// HTTP/2 server (golang.org/x/net/http2, the code net/http bundles) for
// those that chose h2; router/httpx/tlsmux does the handshakes and the
// split. It is the TLS listeners' server unless Options.Stdlib.
type splitTLSServer struct {
	o       Options
	h1      *server.Server
	h2      *http2.Server
	base    *http.Server // h2's base config: limits, error log, shutdown hooks
	handler http.Handler
	ctx     context.Context // requests' base (Options.Base)
	mux     tlsmux.Options
	tls     *tlsmux.Server

	mu       sync.Mutex
	h2conns  map[*tls.Conn]struct{}
	shutdown bool
}

// The held end of an answer (tlsmux.Options.HeldWriteTimeout) gets
// Limits.WriteTimeout, what its other writes get.
func newSplitTLSServer(o Options, cfg *tls.Config) *splitTLSServer {
	s := &splitTLSServer{
		o:       o,
		h1:      leveeServer(o),
		base:    o.h2Base(),
		h2:      &http2.Server{},
		handler: o.Handler,
		ctx:     o.base(),
		h2conns: map[*tls.Conn]struct{}{},
	}
	// ConfigureServer takes the base's idle timeout and registers the
	// graceful shutdown (GOAWAY) that base.Shutdown starts.
	_ = http2.ConfigureServer(s.base, s.h2)
	s.mux = tlsmux.Options{
		Config: cfg,
		// As net/http: the header timeout bounds the handshake too.
		HandshakeTimeout: o.Limits.HeaderTimeout,
		HeldWriteTimeout: o.Limits.WriteTimeout,
		H1:               func(c *tls.Conn) { s.h1.ServeConn(s.ctx, c) },
		H2:               s.serveH2,
		HandshakeError: func(remote string, err error) {
			// The text net/http logs, which the certificate store's
			// handshake log sorts into reasons (certs.HandshakeErrorLog).
			o.logf("http: TLS handshake error from %s: %v", remote, err)
		},
	}
	s.tls = tlsmux.New(s.mux)
	return s
}

// Serve serves ln until Shutdown or Close (http.ErrServerClosed) or an
// accept error.
func (s *splitTLSServer) Serve(ln net.Listener) error {
	err := s.tls.Serve(ln)
	if errors.Is(err, net.ErrClosed) {
		return http.ErrServerClosed
	}
	return err
}

func (s *splitTLSServer) serveH2(c *tls.Conn) {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		_ = c.Close()
		return
	}
	s.h2conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.h2conns, c)
		s.mu.Unlock()
	}()
	s.h2.ServeConn(h2guard.New(c, s.o.floodGuard(c.RemoteAddr().String())), &http2.ServeConnOpts{Context: s.ctx, BaseConfig: s.base, Handler: s.handler})
}

// guardStdlibH2 has srv (net/http's server, Options.Stdlib) serve HTTP/2
// with golang.org/x/net/http2 behind h2guard. ConfigureServer registers
// the graceful shutdown (GOAWAY) that srv.Shutdown starts; its
// TLSNextProto entry is then replaced by one that guards the connection.
func guardStdlibH2(srv *http.Server, o Options) error {
	h2 := &http2.Server{}
	if err := http2.ConfigureServer(srv, h2); err != nil {
		return err
	}
	srv.TLSNextProto[http2.NextProtoTLS] = func(hs *http.Server, c *tls.Conn, h http.Handler) {
		// net/http hands the connection's base context over through the
		// handler, as it does to its own HTTP/2 server.
		var ctx context.Context
		if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
			ctx = bc.BaseContext()
		}
		h2.ServeConn(h2guard.New(c, o.floodGuard(c.RemoteAddr().String())), &http2.ServeConnOpts{Context: ctx, Handler: h, BaseConfig: hs})
	}
	return nil
}

// stop marks the server shut down and closes its listeners.
func (s *splitTLSServer) stop() {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	_ = s.tls.Close()
}

// Shutdown stops accepting, asks HTTP/2 clients to go away (GOAWAY) and
// waits for the HTTP/1.1 requests in progress and the HTTP/2 connections,
// until ctx ends.
func (s *splitTLSServer) Shutdown(ctx context.Context) error {
	s.stop()
	_ = s.base.Shutdown(ctx) // runs the GOAWAY hook; base serves nothing itself
	err := s.h1.Shutdown(ctx)
	done := make(chan struct{})
	go func() {
		s.tls.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		if err == nil {
			err = ctx.Err()
		}
	}
	return err
}

// Close closes the listeners and every connection at once.
func (s *splitTLSServer) Close() error {
	s.stop()
	err := s.h1.Close()
	s.mu.Lock()
	for c := range s.h2conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	return err
}
