package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/api/dashboard"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/file"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/certs"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy/compress"
	"github.com/levee-proxy/levee/router/proxy"
	"github.com/levee-proxy/levee/router/proxy/tcp"
	"github.com/levee-proxy/levee/router/status"
)

// app is a wired Levee: the two handlers and what runs beside them.
type app struct {
	proxy      http.Handler
	api        http.Handler
	background []func(context.Context)
	// stop releases what build started, when serve gives up before
	// running the background functions.
	stop func()

	// certs and tlsConfig serve the TLS listeners; nil without one.
	certs     *certs.Store
	tlsConfig *tls.Config
	// acme obtains certificates (--acme-email, --acme-ca); nil when off.
	acme   *certs.ACME
	router *router.Router
	// tcp relays the TCP routes' connections (openProxyListeners).
	tcp *tcp.Proxy
}

// build wires the sources, the router, the request path and the API. Data
// flows one way: providers (docker, the API store) → router (snapshots and
// state) → proxy (the request path) → backend. The API reads and controls
// the router; it needs nothing from the proxy.
// telemetryFlushTimeout bounds the last export of spans and metrics at
// shutdown.
const telemetryFlushTimeout = 5 * time.Second

func build(ctx context.Context, cfg serveConfig, log zerolog.Logger, reg *prometheus.Registry) (*app, error) {
	if err := api.CheckListen(cfg.APIListen, cfg.APIToken); err != nil {
		return nil, fmt.Errorf("refusing to start: %w", err)
	}

	trusted, err := cfg.trustedProxies()
	if err != nil {
		return nil, err
	}
	underscores, err := proxy.ParseUnderscoreHeaders(cfg.UnderscoreHeaders)
	if err != nil {
		return nil, fmt.Errorf("--underscore-headers: %w", err)
	}
	store := diagnostics.NewStore()
	upgrades, err := cfg.upgradeProtocols()
	if err != nil {
		return nil, err
	}
	routerLog := log.With().Str("component", "router").Logger()
	breakers, rtRef, err := newBreakerStore(cfg, log, reg)
	if err != nil {
		return nil, err
	}
	replica := ""
	if breakers != nil {
		replica = breakers.Replica()
	}
	fleets, closeRateFleet, err := newRateFleet(cfg, replica, log, reg, rtRef)
	if err != nil {
		if breakers != nil {
			_ = breakers.Close()
		}
		return nil, err
	}
	encoders := compress.NewEncoders(int64(cfg.CompressMemory) << 20)
	registerCompressMetrics(reg, encoders)
	ropts := router.Options{
		Logger:            routerLog,
		Registerer:        reg,
		Diagnostics:       store,
		DialTimeout:       cfg.DialTimeout,
		IdleConnTimeout:   cfg.IdleConnTimeout,
		RemovedRouteGrace: cfg.RouteGrace,
		TrustedProxies:    trusted,
		// One encoder budget for the process: a route cannot add memory
		// by being another compress route.
		Encoders:      encoders,
		RateFleet:     fleets.rate,
		InFlightFleet: fleets.inFlight,
		ErrorPagesDir: cfg.ErrorPagesDir,
	}
	if breakers != nil {
		ropts.BreakerStore = breakers
	}
	rt := router.New(ropts)
	rtRef.Store(rt)
	// The request path reads the router's snapshots; it logs under the
	// router's component, as one data plane.
	accessFormat, accessFilter, err := cfg.accessLogFilter()
	if err != nil {
		return nil, err
	}
	tracer, stopTracing, err := cfg.Tracing.start(ctx, version)
	if err != nil {
		return nil, err
	}
	stopMetricsOTLP, err := cfg.MetricsOTLP.start(ctx, reg, cfg.Tracing.ServiceName, version, log.With().Str("component", "metrics").Logger())
	if err != nil {
		flushCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
		_ = stopTracing(flushCtx)
		done()
		return nil, err
	}
	handler := proxy.New(rt, proxy.Options{
		Tracer:            tracer,
		Logger:            routerLog,
		Registerer:        reg,
		AccessLog:         cfg.AccessLog,
		AccessLogFormat:   accessFormat,
		AccessLogOut:      cfg.accessLogOut,
		AccessLogFilter:   accessFilter,
		RouteLatency:      cfg.RouteLatency,
		DialTimeout:       cfg.DialTimeout,
		IdleConnTimeout:   cfg.IdleConnTimeout,
		TrustedProxies:    trusted,
		StrictPaths:       cfg.StrictPaths,
		UnderscoreHeaders: underscores,
		StandardTransport: cfg.BackendClient == "stdlib",
		StickySecret:      []byte(cfg.StickySecret),

		RequestBodyTimeout:   cfg.RequestBodyTimeout,
		RequestBodyMinRate:   cfg.RequestBodyMinRate,
		ResponseWriteTimeout: cfg.ResponseWriteTimeout,
		BackendBodyTimeout:   cfg.BackendBodyTimeout,
		TunnelIdleTimeout:    cfg.TunnelIdleTimeout,
		UpgradeProtocols:     upgrades,
	})
	closeAll := func() {
		rt.Close()
		handler.Close()
		// The spans still batched are sent, and the registry exported
		// once more, before the process exits: together, within
		// telemetryFlushTimeout.
		flushCtx, done := context.WithTimeout(context.Background(), telemetryFlushTimeout)
		var flushed sync.WaitGroup
		flushed.Go(func() { _ = stopTracing(flushCtx) })
		flushed.Go(func() { _ = stopMetricsOTLP(flushCtx) })
		flushed.Wait()
		done()
		if breakers != nil {
			_ = breakers.Close()
		}
		closeRateFleet()
	}

	codec := api.StandardCodec()
	entrypoints, err := api.OpenStore(api.StoreOptions{Path: cfg.StateFile, Codec: codec, Sink: rt,
		Warn: func(msg string) { log.Warn().Str("component", "api").Msg(msg) }})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("loading API state: %w", err)
	}

	a := &app{proxy: handler, stop: closeAll, router: rt}
	// The breakers' history (GET /history, the dashboard's sparklines) is
	// sampled from the counters the breakers keep anyway, on a ticker:
	// nothing is added to the request path.
	a.background = append(a.background, rt.RunHistory)
	if fleets.rate != nil {
		a.background = append(a.background, fleets.rate.Run, fleets.inFlight.Run)
	}
	a.background = append(a.background, func(ctx context.Context) {
		<-ctx.Done()
		closeAll()
	})
	if err := a.buildTLS(cfg, log, reg, rt); err != nil {
		closeAll()
		return nil, err
	}

	var ready []api.ReadyCheck
	// The docker provider watches containers, its Swarm mode services;
	// both may run at once against one engine.
	for _, swarm := range []bool{false, true} {
		if (!swarm && !cfg.DockerEnabled) || (swarm && !cfg.SwarmEnabled) {
			continue
		}
		if !swarm && len(cfg.DockerHosts) > 0 {
			checks, run, err := newDockerHosts(cfg, log, reg, rt)
			if err != nil {
				closeAll()
				return nil, fmt.Errorf("docker provider: %w", err)
			}
			ready = append(ready, checks...)
			a.background = append(a.background, run)
			continue
		}
		name := config.SourceDocker
		if swarm {
			name = config.SourceSwarm
		}
		prov, err := newDockerProvider(cfg, swarm, log, reg)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%s provider: %w", name, err)
		}
		ready = append(ready, api.ReadyCheck{Name: name, Ready: prov.Synced, Connection: dockerConnection(prov)})
		a.background = append(a.background, func(ctx context.Context) {
			if err := prov.Run(ctx, rt); err != nil {
				log.Error().Err(err).Msgf("%s provider stopped", name)
			}
		})
	}

	if len(cfg.ConfigDirs) > 0 || len(cfg.ConfigFiles) > 0 {
		prov, err := file.New(file.Options{
			Dirs:       cfg.ConfigDirs,
			Files:      cfg.ConfigFiles,
			Logger:     log.With().Str("component", config.SourceFile).Logger(),
			Registerer: withHostLabel(cfg, reg),
		})
		if err != nil {
			closeAll()
			return nil, err
		}
		ready = append(ready, api.ReadyCheck{Name: config.SourceFile, Ready: prov.Synced, Connection: fileConnection(prov)})
		a.background = append(a.background, func(ctx context.Context) {
			if err := prov.Run(ctx, rt); err != nil {
				log.Error().Err(err).Msg("file provider stopped")
			}
		})
	}

	if cfg.Kubernetes.Enabled {
		check, run, err := newKubernetes(cfg, log, reg, rt)
		if err != nil {
			closeAll()
			return nil, err
		}
		ready = append(ready, check)
		a.background = append(a.background, run)
	}

	srv, err := api.New(api.Options{
		Router:       rt,
		Store:        entrypoints,
		Codec:        codec,
		Gatherer:     reg,
		Ready:        ready,
		AdminToken:   cfg.APIToken,
		ReadToken:    cfg.APIReadToken,
		Logger:       log.With().Str("component", "api").Logger(),
		Dashboard:    dashboard.Handler(),
		Certificates: a.certificates,
		ListenAddr:   cfg.APIListen,
		Hosts:        cfg.apiHosts(),
	})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("API: %w", err)
	}
	a.api = srv
	return a, nil
}

// newDockerProvider builds the docker provider (in Swarm mode when swarm)
// from the serve flags, with its metrics in reg.
func newDockerProvider(cfg serveConfig, swarm bool, log zerolog.Logger, reg prometheus.Registerer) (*docker.Provider, error) {
	return docker.New(dockerOptions(cfg, swarm, log, reg))
}

// dockerOptions are the docker provider's options from the serve flags.
func dockerOptions(cfg serveConfig, swarm bool, log zerolog.Logger, reg prometheus.Registerer) docker.Options {
	component := config.SourceDocker
	if swarm {
		component = config.SourceSwarm
	}
	return docker.Options{
		Host:           cfg.DockerHost,
		TLSDir:         cfg.DockerTLSDir,
		Parser:         labels.Parser{Prefix: cfg.LabelPrefix, ExposedByDefault: cfg.ExposedByDefault, Constraint: cfg.DockerConstraints},
		Debounce:       cfg.DockerDebounce,
		ResyncInterval: cfg.DockerResync,
		CallTimeout:    cfg.DockerCallTimeout,
		PingInterval:   cfg.DockerPingInterval,
		RetryMax:       cfg.DockerBackoffMax,
		Registerer:     reg,
		Logger:         log.With().Str("component", component).Logger(),
		Swarm:          swarm,
		SwarmPoll:      cfg.SwarmPoll,
	}
}

// newDockerHosts builds the docker provider of several hosts: one /ready
// entry per host (docker/<name>), and the function that runs them all.
func newDockerHosts(cfg serveConfig, log zerolog.Logger, reg prometheus.Registerer, sink docker.Sink) ([]api.ReadyCheck, func(context.Context), error) {
	hosts, err := docker.NewHosts(dockerOptions(cfg, false, log, reg), cfg.DockerHosts)
	if err != nil {
		return nil, nil, err
	}
	var checks []api.ReadyCheck
	for _, p := range hosts.Providers() {
		checks = append(checks, api.ReadyCheck{Name: config.SourceDocker + "/" + p.HostName(), Ready: p.Settled, Connection: dockerConnection(p)})
	}
	run := func(ctx context.Context) {
		if err := hosts.Run(ctx, sink); err != nil {
			log.Error().Err(err).Msg("docker provider stopped")
		}
		_ = hosts.Close()
	}
	return checks, run, nil
}

// withHostLabel is reg for a provider without hosts: with several Docker
// hosts, the providers' shared series carry provider.HostLabel, and a
// registry takes one name with one set of label names only, so this one
// gets it empty.
func withHostLabel(cfg serveConfig, reg prometheus.Registerer) prometheus.Registerer {
	if len(cfg.DockerHosts) == 0 || !cfg.DockerEnabled {
		return reg
	}
	return prometheus.WrapRegistererWith(prometheus.Labels{provider.HostLabel: ""}, reg)
}

// dockerConnection reports the provider's connection in the API's terms.
func dockerConnection(prov *docker.Provider) func() api.Connection {
	return func() api.Connection {
		st := prov.Status()
		return api.Connection{State: string(st.State), Since: st.Since, Error: st.LastError, Reconnects: st.Reconnects}
	}
}

// fileConnection reports the file provider's hold on its files in the
// API's terms.
func fileConnection(prov *file.Provider) func() api.Connection {
	return func() api.Connection {
		st := prov.Status()
		return api.Connection{State: string(st.State), Since: st.Since, Error: st.LastError, Reconnects: st.Reconnects}
	}
}

// buildTLS sets up the certificates of the TLS listeners, when there is
// one: static ones from --tls-cert-dir (polled in the background), the
// default one.
func (a *app) buildTLS(cfg serveConfig, log zerolog.Logger, reg prometheus.Registerer, sink certs.Sink) error {
	specs, err := cfg.listeners()
	if err != nil {
		return err
	}
	if !hasTLS(specs) {
		if cfg.TLSCertDir != "" || len(cfg.TLSCerts) > 0 || cfg.TLSDefaultCert != "" {
			log.Warn().Msg("--tls-cert-dir, --tls-cert and --tls-default-cert have no effect without a TLS listener (--listen name=addr,tls)")
		}
		return nil
	}
	store, err := certs.New(certs.Options{
		Dir:         cfg.TLSCertDir,
		Files:       cfg.TLSCerts,
		DefaultCert: cfg.TLSDefaultCert,
		DefaultKey:  cfg.TLSDefaultKey,
		Sink:        sink,
		Logger:      log.With().Str("component", "tls").Logger(),
		Registerer:  reg,
	})
	if err != nil {
		return fmt.Errorf("TLS certificates: %w", err)
	}
	a.certs = store
	a.tlsConfig = store.Config(false)
	a.background = append(a.background, store.Run)
	return nil
}

// certificates is GET /certificates: nil without a TLS listener.
func (a *app) certificates() []status.CertificateStatus {
	if a.certs == nil {
		return nil
	}
	return a.certs.Certificates()
}

// registerCompressMetrics exports the compression budget's use: what the
// encoders hold, and how many responses went out uncompressed for want of
// it (a budget too small for the traffic, or clients stalling answers).
func registerCompressMetrics(reg prometheus.Registerer, e *compress.Encoders) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "levee_compress_memory_bytes",
			Help: "Memory held by compression encoders (in use or idle), of --compress-memory.",
		}, func() float64 { return float64(e.Used()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "levee_compress_budget_exhausted_total",
			Help: "Responses sent uncompressed because the compression encoders' memory budget (--compress-memory) was spent.",
		}, func() float64 { return float64(e.Refused()) }),
	)
}
