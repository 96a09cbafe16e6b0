package main

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker/fleet"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
	"github.com/levee-proxy/levee/router/policy/ratelimit/fleetstore"
)

// newRateFleet connects the fleet rate limits (rateLimit.scope=fleet) to
// the breaker store when --breaker-store is set (nil otherwise: those
// limits are local, W068). It has a client of its own, so that its
// reconciliations never queue behind the breakers' flushes. Its
// diagnostics go to the router through rtRef, as the breaker store's.
func newRateFleet(cfg serveConfig, replica string, log zerolog.Logger, reg prometheus.Registerer, rtRef *atomic.Pointer[router.Router]) (*ratelimit.Fleet, func(), error) {
	if cfg.BreakerStore == "" {
		return nil, func() {}, nil
	}
	client, err := fleet.NewClient(cfg.BreakerStore)
	if err != nil {
		return nil, nil, fmt.Errorf("--breaker-store: %w", err)
	}
	st, err := fleetstore.New(fleetstore.Options{Client: client, Prefix: cfg.BreakerStorePrefix, Replica: replica,
		Live: max(fleetstore.DefaultLive, 10*cfg.RateLimitFlushInterval)})
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	rf := ratelimit.NewFleet(ratelimit.FleetOptions{
		Shared: st, FlushInterval: cfg.RateLimitFlushInterval,
		Logger: log.With().Str("component", "rate-limit-store").Logger(),
		OnDiagnostics: func(ds []diagnostics.Diagnostic) {
			if rt := rtRef.Load(); rt != nil {
				rt.ReportDiagnostics(ratelimit.DiagnosticsSource, ds)
			}
		},
	})
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "levee_ratelimit_store_errors_total",
			Help: "Reconciliations of the fleet rate limits with the breaker store that failed (the limits are then local, W059)."},
			func() float64 { return float64(rf.Errors()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "levee_ratelimit_store_keys_synced_total",
			Help: "Rate-limit keys reconciled with the breaker store."},
			func() float64 { return float64(rf.Synced()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "levee_ratelimit_store_local",
			Help: "1 while the fleet rate limits are enforced locally because the breaker store failed, else 0."},
			func() float64 {
				if rf.Local() {
					return 1
				}
				return 0
			}),
	)
	return rf, func() { _ = client.Close() }, nil
}
