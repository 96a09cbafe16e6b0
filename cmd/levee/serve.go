package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/httpx/front"
	"github.com/levee-proxy/levee/router/httpx/h3"
	"github.com/levee-proxy/levee/router/httpx/proxyheader"
	"github.com/levee-proxy/levee/router/httpx/server"
	"github.com/levee-proxy/levee/router/proxy"
	"github.com/levee-proxy/levee/router/proxy/tcp"
	"github.com/levee-proxy/levee/router/proxy/udp"
)

// newLogger builds the process logger from --log-level and --log-format.
func newLogger(cfg serveConfig, out io.Writer) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(strings.ToLower(cfg.LogLevel))
	if err != nil || cfg.LogLevel == "" {
		return zerolog.Nop(), fmt.Errorf("--log-level %q: want debug, info, warn or error", cfg.LogLevel)
	}
	tty := writesToTerminal(out)
	format := cfg.LogFormat
	if format == "auto" {
		format = "json"
		if tty {
			format = "console"
		}
	}
	w := out
	if format == "console" {
		// Colour codes only on a terminal: in a file, a pipe or
		// `docker logs` they are noise that breaks grep.
		w = zerolog.ConsoleWriter{Out: out, TimeFormat: time.RFC3339, NoColor: !tty}
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

// writesToTerminal reports whether out is a terminal.
func writesToTerminal(out io.Writer) bool {
	f, ok := out.(*os.File)
	return ok && isTerminal(f)
}

// runServe runs the proxy until ctx is cancelled (SIGINT/SIGTERM), then
// stops accepting, drains in-flight requests up to --shutdown-timeout and
// returns 0.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cfg, err := parseServeFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = checkAPITokens(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "levee: %v\n", err)
		return 2
	}
	outs, err := openLogOutputs(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "levee: %v\n", err)
		return 1
	}
	defer outs.close() // after the last line: it writes what is pending
	procOut := stdout
	if outs.process != nil {
		procOut = outs.process
	}
	switch {
	case outs.access != nil:
		cfg.accessLogOut = outs.access
	case cfg.AccessLogFormat != "json":
		cfg.accessLogOut = stdout // Apache's lines on stdout, beside the process log
	}
	log, err := newLogger(cfg, procOut)
	if err != nil {
		fmt.Fprintf(stderr, "levee: %v\n", err)
		return 2
	}
	if err := serve(ctx, cfg, log, outs); err != nil {
		log.Error().Err(err).Msg("levee stopped")
		return 1
	}
	return 0
}

// httpServer is what serve needs of an HTTP server: net/http's and
// router/httpx/server's both are one (front.Server).
type httpServer = front.Server

// newProxyServer returns the proxy listener's server: Levee's own HTTP/1.1
// connection loop (router/httpx/server) unless --http-server=stdlib, with the same
// limits either way.
func newProxyServer(kind string, h http.Handler, errorLog *stdlog.Logger) httpServer {
	return front.Plain(frontOptions(kind, h, listenerSpec{Name: defaultListenerName}, &router.Listener{Name: defaultListenerName}, errorLog, 0, nil))
}

// frontOptions are the servers' options of the listener l of spec: its
// limits, its handler, its requests' base context (where the request path
// finds the listener), the server choice (--http-server) and the count of
// HTTP/2 connections cut for a flood (levee_http2_connections_cut_total).
func frontOptions(kind string, h http.Handler, spec listenerSpec, l *router.Listener, errorLog *stdlog.Logger, writeTimeout time.Duration, h2cut *prometheus.CounterVec) front.Options {
	o := front.Options{
		Handler: h,
		Base:    router.WithListener(context.Background(), l),
		Limits: front.Limits{
			HeaderTimeout:  spec.headerTimeout(),
			IdleTimeout:    spec.idleTimeout(),
			MaxHeaderBytes: proxyMaxHeaderBytes,
			WriteTimeout:   writeTimeout,
		},
		Stdlib:        kind == "stdlib",
		RefusalHeader: http.Header{proxy.HeaderDiagnostic: {proxy.DiagnosticBadRequest}},
		ErrorLog:      errorLog,
	}
	if h2cut != nil {
		o.OnFloodCut = func(frame string) { h2cut.WithLabelValues(frame).Inc() }
	}
	return o
}

// serve wires the sources, the router and the listeners together.
func serve(ctx context.Context, cfg serveConfig, log zerolog.Logger, outs *logOutputs) error {
	log.Info().Str("version", version).Str("commit", commit).Str("http_server", cfg.HTTPServer).Str("backend_client", cfg.BackendClient).Msg("levee starting")
	// SIGUSR1 reopens the log files, and never stops Levee (its default
	// action), even when there is no file to reopen.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	reopenCtx, stopReopen := context.WithCancel(ctx)
	defer stopReopen()
	go reopenOn(reopenCtx, usr1, outs, log)

	switch {
	case cfg.gogc != "":
		log.Info().Str("gogc", cfg.gogc).Msg("garbage collector paced by GOGC; --gc-heap-floor is ignored")
	case cfg.GCHeapFloor > 0:
		floor := newHeapFloor(uint64(cfg.GCHeapFloor) << 20)
		floor.start()
		defer floor.stop()
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	outs.register(reg)

	app, err := build(ctx, cfg, log, reg)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	proxies, err := openProxyListeners(cfg, app, log, reg)
	if err != nil {
		cancel()
		app.stop()
		return err
	}
	apiLn, err := net.Listen("tcp", cfg.APIListen)
	if err != nil {
		for _, p := range proxies {
			p.ln.Close()
		}
		cancel()
		app.stop()
		return fmt.Errorf("API listener on %s: %w", cfg.APIListen, err)
	}
	apiSrv := &http.Server{
		Handler:           app.api,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          stdLogger(log, "api"),
		// SSE streams end with runCtx, so Shutdown does not wait for them.
		BaseContext: func(net.Listener) context.Context { return runCtx },
	}
	var wg sync.WaitGroup
	errc := make(chan error, 2*len(proxies)+1) // a proxy listener may have an HTTP/3 server beside it
	serve1 := func(role string, spec listenerSpec, srv httpServer, ln net.Listener) {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("%s listener %s on %s: %w", role, spec.Name, ln.Addr(), err)
		}
	}
	// Listening is logged in declaration order (the plain listener of
	// --http-listen first), before serving: the sockets are bound already.
	serveOn := func(role string, spec listenerSpec, srv httpServer, ln net.Listener) {
		log.Info().Str("listener", role).Str("name", spec.Name).Bool("tls", spec.TLS).Bool("tcp", spec.TCP).Bool("udp", spec.UDP).Str("addr", ln.Addr().String()).Msg("listening")
		wg.Add(1)
		go serve1(role, spec, srv, ln)
	}
	servers := []httpServer{apiSrv}
	for _, p := range proxies {
		serveOn("proxy", p.spec, p.srv, p.ln)
		servers = append(servers, p.srv)
		if p.h3 != nil {
			log.Info().Str("listener", "proxy").Str("name", p.spec.Name).Bool("tls", true).Str("protocol", "HTTP/3").Str("addr", "udp "+p.h3.Addr().String()).Msg("listening")
			wg.Add(1)
			go serve1("HTTP/3", p.spec, h3Serving{p.h3}, p.ln)
			servers = append(servers, h3Serving{p.h3})
		}
	}
	if app.tcp != nil {
		// The TCP connections a TLS listener handed over by SNI drain
		// with the rest, even without a TCP listener.
		servers = append(servers, tcpDrain{app.tcp})
	}
	serveOn("api", listenerSpec{Name: "api"}, apiSrv, apiLn)
	for _, background := range app.background {
		wg.Add(1)
		go func() { defer wg.Done(); background(runCtx) }()
	}

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info().Dur("timeout_ms", cfg.ShutdownTimeout).Msg("shutting down: draining in-flight requests")
	case serveErr = <-errc:
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer done()
	// Shutdown stops accepting at once and waits for in-flight requests;
	// SSE streams and hijacked connections end with runCtx.
	var shutdownErr error
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			shutdownErr = errors.Join(shutdownErr, err)
			srv.Close()
		}
	}
	wg.Wait()
	if shutdownErr != nil {
		log.Warn().Err(shutdownErr).Msg("shutdown timeout reached; remaining connections were closed")
	}
	log.Info().Msg("levee stopped")
	return serveErr
}

// proxyListener is one open proxy listener and its server.
type proxyListener struct {
	spec listenerSpec
	ln   net.Listener
	srv  httpServer
	// h3 serves HTTP/3 beside a TLS listener declared with h3; nil
	// otherwise.
	h3 *h3.Server
}

// closeProxyListeners closes what openProxyListeners opened, when it
// gives up.
func closeProxyListeners(out []proxyListener) {
	for _, p := range out {
		p.ln.Close()
		if p.h3 != nil {
			p.h3.Close()
		}
	}
}

// openProxyListeners opens every proxy listener with its server: Levee's
// own HTTP/1.1 server (or net/http's, --http-server=stdlib) on plain
// listeners, net/http's with TLS, HTTP/2 and HTTP/1.1 on TLS listeners.
// Beyond --max-client-conns on one listener a connection is accepted and
// closed at once: the backlog never hides a flood, and it is counted.
// tcpOptions are the TCP routes' relay options of cfg.
func tcpOptions(cfg serveConfig, app *app, log zerolog.Logger, reg prometheus.Registerer) tcp.Options {
	return tcp.Options{Snapshot: app.router.Snapshot, Logger: log, Registerer: reg, TLS: app.tlsConfig, NoSplice: !cfg.TCPSplice}
}

func openProxyListeners(cfg serveConfig, app *app, log zerolog.Logger, reg prometheus.Registerer) ([]proxyListener, error) {
	specs, err := cfg.listeners()
	if err != nil {
		return nil, err
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_client_connections_refused_total",
		Help: "Client connections closed at accept because --max-client-conns were open, by proxy listener name.",
	}, []string{"listener"})
	reg.MustRegister(refused)
	h2cut := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_http2_connections_cut_total",
		Help: "HTTP/2 connections closed for sending control frames past their budget, by the frame type that passed it.",
	}, []string{"frame"})
	reg.MustRegister(h2cut)
	trusted, err := cfg.trustedProxies()
	if err != nil {
		return nil, err
	}
	ppRefused := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "levee_proxy_protocol_refused_total",
		Help: "Connections closed on a proxy-protocol listener, by listener and reason (untrusted: the peer is not in --trusted-proxies; bad_header: no valid PROXY header within the deadline).",
	}, []string{"listener", "reason"})
	reg.MustRegister(ppRefused)
	var out []proxyListener
	bound := slices.Clone(specs) // with the ports the system chose for :0
	for i, spec := range specs {
		if spec.UDP {
			pc, err := net.ListenPacket("udp", spec.Addr)
			if err != nil {
				closeProxyListeners(out)
				return nil, fmt.Errorf("proxy listener %s on %s (udp): %w", spec.Name, spec.Addr, err)
			}
			bound[i].Addr = pc.LocalAddr().String()
			out = append(out, proxyListener{spec: spec, ln: packetListener{pc}})
			continue
		}
		ln, err := server.Listen(context.Background(), spec.Addr)
		if err != nil {
			closeProxyListeners(out)
			return nil, fmt.Errorf("proxy listener %s on %s: %w", spec.Name, spec.Addr, err)
		}
		bound[i].Addr = ln.Addr().String()
		ln = server.LimitListener(ln, cfg.MaxClientConns, refused.WithLabelValues(spec.Name).Inc)
		if spec.ProxyProtocol {
			ln = proxyheader.Listen(ln, proxyheader.Options{Trusted: trusted, Refused: proxyProtocolRefused(spec.Name, ppRefused, log)})
		}
		out = append(out, proxyListener{spec: spec, ln: ln})
	}
	if err := app.enableACME(cfg, bound, log, reg); err != nil {
		closeProxyListeners(out)
		return nil, err
	}
	ls := routerListeners(bound)
	app.background = append(app.background, func(ctx context.Context) { watchRoutes(ctx, app.router, ls, app.acme) })
	tp := tcp.New(tcpOptions(cfg, app, log, reg))
	app.tcp = tp
	up := udp.New(udp.Options{Snapshot: app.router.Snapshot, Logger: log, Registerer: reg})
	for i, l := range ls {
		switch {
		case out[i].spec.UDP:
			pl := out[i].ln.(packetListener)
			out[i].srv = &udpServer{l: up.Listen(pl.pc, l.Name), pc: pl.pc}
			continue
		case out[i].spec.TCP:
			out[i].srv = &tcpServer{p: tp, name: l.Name}
			continue
		case out[i].spec.TLS:
			// TCP routes with SNI take their connections before TLS
			// reaches the HTTP server.
			out[i].ln = tp.SNIListener(out[i].ln, l.Name, out[i].spec.headerTimeout())
		}
		if out[i].spec.TLS {
			handler := app.proxy
			if out[i].spec.H3 {
				srv, err := openH3(out[i].spec, bound[i].Addr, l, app.proxy, app, cfg.MaxClientConns, refused.WithLabelValues(l.Name).Inc)
				if err != nil {
					closeProxyListeners(out)
					return nil, err
				}
				out[i].h3 = srv
				handler = srv.AltSvc(app.proxy) // HTTP/1.1 and HTTP/2 answers advertise it
			}
			errLog := stdlog.New(app.certs.HandshakeErrorLog(log.With().Str("component", "tls").Str("listener", l.Name).Logger()), "", 0)
			out[i].srv = front.TLS(frontOptions(cfg.HTTPServer, handler, out[i].spec, l, errLog, cfg.ResponseWriteTimeout, h2cut), app.tlsConfig)
		} else {
			o := frontOptions(cfg.HTTPServer, app.plainHandler(), out[i].spec, l, stdLogger(log, "proxy"), cfg.ResponseWriteTimeout, h2cut)
			out[i].srv = front.Plain(o)
			if out[i].spec.H2C {
				out[i].ln = front.H2C(out[i].ln, o)
			}
		}
	}
	return out, nil
}

// proxyProtocolRefused counts and logs (at debug: a scan must not flood
// the log) a connection a proxy-protocol listener closed.
func proxyProtocolRefused(listener string, c *prometheus.CounterVec, log zerolog.Logger) func(string, net.Addr, error) {
	return func(reason string, peer net.Addr, err error) {
		c.WithLabelValues(listener, reason).Inc()
		log.Debug().Str("listener", listener).Str("reason", reason).Str("peer", peer.String()).Err(err).Msg("PROXY protocol connection refused")
	}
}
