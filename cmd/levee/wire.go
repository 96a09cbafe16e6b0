package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/fleet"
	"github.com/levee-proxy/levee/router/proxy"
)

// app is a wired Levee: the two handlers and what runs beside them.
type app struct {
	proxy      http.Handler
	api        http.Handler
	background []func(context.Context)
}

// build wires the sources, the router, the request path and the API. Data
// flows one way: providers (docker, the API store) → router (snapshots and
// state) → proxy (the request path) → backend. The API reads and controls
// the router; it needs nothing from the proxy.
func build(ctx context.Context, cfg serveConfig, log zerolog.Logger, reg *prometheus.Registry) (*app, error) {
	if err := api.CheckListen(cfg.APIListen, cfg.APIToken); err != nil {
		return nil, fmt.Errorf("refusing to start: %w", err)
	}

	trusted, err := cfg.trustedProxies()
	if err != nil {
		return nil, err
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
	ropts := router.Options{
		Logger:            routerLog,
		Registerer:        reg,
		Diagnostics:       store,
		DialTimeout:       cfg.DialTimeout,
		IdleConnTimeout:   cfg.IdleConnTimeout,
		RemovedRouteGrace: cfg.RouteGrace,
	}
	if breakers != nil {
		ropts.BreakerStore = breakers
	}
	rt := router.New(ropts)
	rtRef.Store(rt)
	// The request path reads the router's snapshots; it logs under the
	// router's component, as one data plane.
	handler := proxy.New(rt, proxy.Options{
		Logger:            routerLog,
		Registerer:        reg,
		AccessLog:         cfg.AccessLog,
		DialTimeout:       cfg.DialTimeout,
		IdleConnTimeout:   cfg.IdleConnTimeout,
		TrustedProxies:    trusted,
		StandardTransport: cfg.BackendClient == "stdlib",

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
		if breakers != nil {
			_ = breakers.Close()
		}
	}

	codec := api.StandardCodec()
	entrypoints, err := api.OpenStore(api.StoreOptions{Path: cfg.StateFile, Codec: codec, Sink: rt})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("loading API state: %w", err)
	}

	a := &app{proxy: handler}
	a.background = append(a.background, func(ctx context.Context) {
		<-ctx.Done()
		closeAll()
	})

	var ready []api.ReadyCheck
	if cfg.DockerEnabled {
		prov, err := newDockerProvider(cfg, log, reg)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("docker provider: %w", err)
		}
		ready = append(ready, api.ReadyCheck{Name: "docker", Ready: prov.Synced, Connection: dockerConnection(prov)})
		a.background = append(a.background, func(ctx context.Context) {
			if err := prov.Run(ctx, rt); err != nil {
				log.Error().Err(err).Msg("docker provider stopped")
			}
		})
	}

	srv, err := api.New(api.Options{
		Router:     rt,
		Store:      entrypoints,
		Codec:      codec,
		Gatherer:   reg,
		Ready:      ready,
		AdminToken: cfg.APIToken,
		ReadToken:  cfg.APIReadToken,
		Logger:     log.With().Str("component", "api").Logger(),
	})
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("API: %w", err)
	}
	a.api = srv
	return a, nil
}

// newBreakerStore connects the shared breaker store when --breaker-store
// is set (nil otherwise). Its diagnostics go to the router, which exists
// only once the store is given to it: they are reported through rtRef,
// and dropped until it is set (the first flush comes later anyway).
func newBreakerStore(cfg serveConfig, log zerolog.Logger, reg prometheus.Registerer) (*fleet.Store, *atomic.Pointer[router.Router], error) {
	rtRef := new(atomic.Pointer[router.Router])
	if cfg.BreakerStore == "" {
		return nil, rtRef, nil
	}
	// go-redis logs (a failed dial, a lost subscription) are the
	// library's, process-wide: route them to the breaker store's log so
	// that they are JSON lines like every other.
	storeLog := log.With().Str("component", "breaker-store").Logger()
	redis.SetLogger(redisLogger{storeLog})
	client, err := fleet.NewClient(cfg.BreakerStore)
	if err != nil {
		return nil, nil, fmt.Errorf("--breaker-store: %w", err)
	}
	st, err := fleet.New(fleet.Options{
		Client:        client,
		Prefix:        cfg.BreakerStorePrefix,
		FlushInterval: cfg.BreakerStoreFlushInterval,
		Logger:        storeLog,
		Registerer:    reg,
		OnDiagnostics: func(ds []diagnostics.Diagnostic) {
			if rt := rtRef.Load(); rt != nil {
				rt.ReportDiagnostics(fleet.DiagnosticsSource, ds)
			}
		},
	})
	if err != nil {
		_ = client.Close()
		return nil, nil, fmt.Errorf("--breaker-store: %w", err)
	}
	log.Info().Str("event", "breaker_store").Str("prefix", cfg.BreakerStorePrefix).Str("replica", st.Replica()).
		Dur("flush_interval", cfg.BreakerStoreFlushInterval).Msg("breakers are shared through the breaker store")
	return st, rtRef, nil
}

// redisLogger adapts zerolog to go-redis's logger.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn().Str("event", "breaker_store_client").Msg(fmt.Sprintf(format, v...))
}

// newDockerProvider builds the docker provider from the serve flags, with
// its metrics in reg.
func newDockerProvider(cfg serveConfig, log zerolog.Logger, reg prometheus.Registerer) (*docker.Provider, error) {
	return docker.New(docker.Options{
		Host:           cfg.DockerHost,
		Parser:         labels.Parser{Prefix: cfg.LabelPrefix, ExposedByDefault: cfg.ExposedByDefault},
		Debounce:       cfg.DockerDebounce,
		ResyncInterval: cfg.DockerResync,
		CallTimeout:    cfg.DockerCallTimeout,
		PingInterval:   cfg.DockerPingInterval,
		RetryMax:       cfg.DockerBackoffMax,
		Registerer:     reg,
		Logger:         log.With().Str("component", "docker").Logger(),
	})
}

// dockerConnection reports the provider's connection in the API's terms.
func dockerConnection(prov *docker.Provider) func() api.Connection {
	return func() api.Connection {
		st := prov.Status()
		return api.Connection{State: string(st.State), Since: st.Since, Error: st.LastError, Reconnects: st.Reconnects}
	}
}
