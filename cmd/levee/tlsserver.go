//lint:file-ignore SA1019 HTTP/2 is served by x/net/http2.Server (ServeConn, ConfigureServer) until it moves to net/http's own HTTP/2 support (http.Server.Protocols); the h2guard budget and the h2spec results are tied to this server

package main

import (
	"context"
	"crypto/tls"
	"errors"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/httpx/h2guard"
	"github.com/levee-proxy/levee/router/httpx/server"
	"github.com/levee-proxy/levee/router/httpx/tlsmux"
)

// splitTLSServer serves a TLS listener with Levee's own HTTP/1.1 server
// for the connections that chose HTTP/1.1 (or no ALPN), and net/http's
// HTTP/2 server (golang.org/x/net/http2, the code net/http bundles) for
// those that chose h2; router/httpx/tlsmux does the handshakes and the
// split. It is the TLS listeners' server unless --http-server=stdlib.
type splitTLSServer struct {
	h1      *server.Server
	h2      *http2.Server
	h2cut   *prometheus.CounterVec // levee_http2_connections_cut_total
	base    *http.Server           // h2's base config: limits, error log, shutdown hooks
	handler http.Handler
	ctx     context.Context // requests' base: the listener (router.WithListener)
	mux     tlsmux.Options
	tls     *tlsmux.Server

	mu       sync.Mutex
	h2conns  map[*tls.Conn]struct{}
	shutdown bool
}

// writeTimeout is --response-write-timeout: the held end of an answer
// (tlsmux.Options.HeldWriteTimeout) gets what its other writes get.
func newSplitTLSServer(h http.Handler, spec listenerSpec, l *router.Listener, cfg *tls.Config, writeTimeout time.Duration, errorLog *stdlog.Logger, h2cut *prometheus.CounterVec) *splitTLSServer {
	s := &splitTLSServer{
		h1: newLeveeServer(h, spec, errorLog),
		base: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: spec.headerTimeout(),
			IdleTimeout:       spec.idleTimeout(),
			MaxHeaderBytes:    proxyMaxHeaderBytes,
			ErrorLog:          errorLog,
		},
		h2:      &http2.Server{},
		h2cut:   h2cut,
		handler: h,
		ctx:     router.WithListener(context.Background(), l),
		h2conns: map[*tls.Conn]struct{}{},
	}
	// ConfigureServer takes the base's idle timeout and registers the
	// graceful shutdown (GOAWAY) that base.Shutdown starts.
	_ = http2.ConfigureServer(s.base, s.h2)
	s.mux = tlsmux.Options{
		Config: cfg,
		// As net/http: the header timeout bounds the handshake too.
		HandshakeTimeout: spec.headerTimeout(),
		HeldWriteTimeout: writeTimeout,
		H1:               func(c *tls.Conn) { s.h1.ServeConn(s.ctx, c) },
		H2:               s.serveH2,
		HandshakeError: func(remote string, err error) {
			// The text net/http logs, which the certificate store's
			// handshake log sorts into reasons (certs.HandshakeErrorLog).
			errorLog.Printf("http: TLS handshake error from %s: %v", remote, err)
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
	s.h2.ServeConn(guardH2(c, s.base.ErrorLog, s.h2cut), &http2.ServeConnOpts{Context: s.ctx, BaseConfig: s.base, Handler: s.handler})
}

// guardH2 bounds the control frames of an HTTP/2 connection (h2guard:
// SETTINGS, WINDOW_UPDATE, PRIORITY, PING and unknown frames, which no
// HTTP/2 server refuses), and logs and counts a connection cut for a
// flood (frames of undefined types under one label, "unknown").
func guardH2(c *tls.Conn, errorLog *stdlog.Logger, cut *prometheus.CounterVec) *h2guard.Conn {
	remote := c.RemoteAddr().String()
	return h2guard.New(c, h2guard.Options{OnFlood: func(frameType uint8) { countFlood(errorLog, cut, remote, frameType) }})
}

// countFlood logs and counts an HTTP/2 connection cut by h2guard.
func countFlood(errorLog *stdlog.Logger, cut *prometheus.CounterVec, remote string, frameType uint8) {
	name := h2guard.FrameName(frameType)
	errorLog.Printf("http2: connection from %s cut: %s frames past its budget (ENHANCE_YOUR_CALM)", remote, name)
	if strings.HasPrefix(name, "0x") {
		name = "unknown"
	}
	cut.WithLabelValues(name).Inc()
}

// guardStdlibH2 has srv (net/http's server, --http-server=stdlib) serve
// HTTP/2 with golang.org/x/net/http2 behind guardH2. ConfigureServer
// registers the graceful shutdown (GOAWAY) that srv.Shutdown starts; its
// TLSNextProto entry is then replaced by one that guards the connection.
func guardStdlibH2(srv *http.Server, h2cut *prometheus.CounterVec) error {
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
		h2.ServeConn(guardH2(c, hs.ErrorLog, h2cut), &http2.ServeConnOpts{Context: ctx, Handler: h, BaseConfig: hs})
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
