package main

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker/fleet"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/policy/fleetsync"
	"github.com/levee-proxy/levee/router/policy/inflight"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
	"github.com/levee-proxy/levee/router/policy/ratelimit/fleetstore"
)

// fleetLimits are the rate and in-flight limits shared by a fleet
// through the breaker store (both nil without --breaker-store).
type fleetLimits struct {
	rate     *ratelimit.Fleet
	inFlight *inflight.Fleet
}

// newRateFleet connects the fleet rate limits (rateLimit.scope=fleet) and
// in-flight limits (inFlight.scope=fleet) to the breaker store when
// --breaker-store is set (nil otherwise: those limits are local, W068).
// They have a client of their own, so that their reconciliations never
// queue behind the breakers' flushes. Their diagnostics go to the router
// through rtRef, as the breaker store's.
func newRateFleet(cfg serveConfig, replica string, log zerolog.Logger, reg prometheus.Registerer, rtRef *atomic.Pointer[router.Router]) (fleetLimits, func(), error) {
	if cfg.BreakerStore == "" {
		return fleetLimits{}, func() {}, nil
	}
	client, err := fleet.NewClient(cfg.BreakerStore)
	if err != nil {
		return fleetLimits{}, nil, fmt.Errorf("--breaker-store: %w", err)
	}
	st, err := fleetstore.New(fleetstore.Options{Client: client, Prefix: cfg.BreakerStorePrefix, Replica: replica,
		Live: max(fleetstore.DefaultLive, 10*cfg.RateLimitFlushInterval)})
	if err != nil {
		_ = client.Close()
		return fleetLimits{}, nil, err
	}
	report := func(source string) func([]diagnostics.Diagnostic) {
		return func(ds []diagnostics.Diagnostic) {
			if rt := rtRef.Load(); rt != nil {
				rt.ReportDiagnostics(source, ds)
			}
		}
	}
	rf := ratelimit.NewFleet(ratelimit.FleetOptions{Shared: st, Options: fleetsync.Options{
		FlushInterval: cfg.RateLimitFlushInterval,
		Logger:        log.With().Str("component", "rate-limit-store").Logger(),
		OnDiagnostics: report(ratelimit.DiagnosticsSource),
	}})
	iff := inflight.NewFleet(inflight.FleetOptions{Shared: st, Options: fleetsync.Options{
		FlushInterval: cfg.RateLimitFlushInterval,
		Logger:        log.With().Str("component", "in-flight-store").Logger(),
		OnDiagnostics: report(inflight.DiagnosticsSource),
	}})
	registerFleetMetrics(reg, "levee_ratelimit_store_", "rate limits", "Rate-limit keys", rf)
	registerFleetMetrics(reg, "levee_inflight_store_", "in-flight limits", "In-flight counters", iff)
	return fleetLimits{rate: rf, inFlight: iff}, func() { _ = client.Close() }, nil
}

// fleetReconciler is what the metrics read of a fleet limit's
// reconciliations (fleetsync.Reconciler).
type fleetReconciler interface {
	Errors() int64
	Synced() int64
	Local() bool
}

// registerFleetMetrics registers the metrics of one kind of fleet limit:
// prefix+errors_total, prefix+keys_synced_total and prefix+local. limits
// names the limits ("rate limits"), keys what a reconciliation syncs
// ("Rate-limit keys").
func registerFleetMetrics(reg prometheus.Registerer, prefix, limits, keys string, r fleetReconciler) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: prefix + "errors_total",
			Help: "Reconciliations of the fleet " + limits + " with the breaker store that failed (the limits are then local, W059)."},
			func() float64 { return float64(r.Errors()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: prefix + "keys_synced_total",
			Help: keys + " reconciled with the breaker store."},
			func() float64 { return float64(r.Synced()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: prefix + "local",
			Help: "1 while the fleet " + limits + " are enforced locally because the breaker store failed, else 0."},
			func() float64 {
				if r.Local() {
					return 1
				}
				return 0
			}),
	)
}
