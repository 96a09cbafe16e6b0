package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router"
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
	rt := router.New(router.Options{
		Logger:            routerLog,
		Registerer:        reg,
		Diagnostics:       store,
		DialTimeout:       cfg.DialTimeout,
		IdleConnTimeout:   cfg.IdleConnTimeout,
		RemovedRouteGrace: cfg.RouteGrace,
	})
	// The request path reads the router's snapshots; it logs under the
	// router's component, as one data plane.
	handler := proxy.New(rt, proxy.Options{
		Logger:            routerLog,
		Registerer:        reg,
		AccessLog:         cfg.AccessLog,
		RouteLatency:      cfg.RouteLatency,
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
	}

	codec := api.StandardCodec()
	entrypoints, err := api.OpenStore(api.StoreOptions{Path: cfg.StateFile, Codec: codec, Sink: rt,
		Warn: func(msg string) { log.Warn().Str("component", "api").Msg(msg) }})
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
