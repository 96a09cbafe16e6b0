package main

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker/fleet"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
)

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
		Client:          client,
		Prefix:          cfg.BreakerStorePrefix,
		FlushInterval:   cfg.BreakerStoreFlushInterval,
		FallbackFlushes: cfg.BreakerStoreFallbackFlushes,
		FallbackAfter:   cfg.BreakerStoreFallbackAfter,
		RejoinFlushes:   cfg.BreakerStoreRejoinFlushes,
		Logger:          storeLog,
		Registerer:      reg,
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
		Dur("flush_interval_ms", cfg.BreakerStoreFlushInterval).Int("fallback_flushes", cfg.BreakerStoreFallbackFlushes).
		Dur("fallback_after_ms", cfg.BreakerStoreFallbackAfter).Int("rejoin_flushes", cfg.BreakerStoreRejoinFlushes).Msg("breakers are shared through the breaker store")
	if cfg.StickySecret == "" {
		// Each replica then keys sticky cookies with its own random
		// secret: a client moved to another replica loses its pin.
		log.Warn().Str("event", "sticky_secret_missing").
			Msg("a fleet without --sticky-secret: each replica names backends in sticky cookies differently; give every replica the same secret (docs/fleet.md)")
	}
	return st, rtRef, nil
}

// redisLogger adapts zerolog to go-redis's logger.
type redisLogger struct{ log zerolog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn().Str("event", "breaker_store_client").Msg(fmt.Sprintf(format, v...))
}
