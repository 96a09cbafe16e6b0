// Package router turns the config sources' entrypoints into immutable
// route tables and keeps the runtime state that outlives them. The config
// model it routes (config.Entrypoint, …) and its one validator live in
// router/config; the views it publishes (status, events) in router/status;
// the request path that reads its snapshots in router/proxy, which this
// package never imports.
//
// # Config to snapshot
//
// Each config source hands the Router its complete current list of
// entrypoints (Update with a config.SourceUpdate), or, like the API
// store, what one write changed (Patch with a config.SourcePatch: ids put
// and deleted). The Router merges all sources, detects collisions (W018,
// with a deterministic winner) and builds an immutable Snapshot that
// requests read through an atomic.Pointer: no lock on the request path
// and no request ever sees half a config. A snapshot is built from the
// previous one: unchanged routes are carried over, and its id and host
// indexes are split in shards (router/shardmap) so that only the shards a change
// touches are copied; a patch rebuilds only its ids' routes, so one write
// costs about the same at 10 routes as at 10,000. Matching is one map
// lookup for the exact host (a few more for wildcards) and one per path
// segment, whatever the number of routes, and does not allocate. The
// path it is given is the proxy's normal form; on a host with
// case-insensitive routes (fold.go) the folded path is walked too, and the
// deeper match wins.
//
// # State outlives config
//
// Runtime state — breakers (Guard) with their parameters and manual
// control, balancer counters (BalancerState), in-flight counts, active
// health, passive ejection records (EjectionState), the retry budget —
// lives in a registry keyed by route id and backend address, outside the
// snapshot. A new snapshot re-attaches to it and applies new parameters
// (Breaker.SetParams); state of a route or backend that disappeared is
// dropped only after a grace period, and a route that vanished from a
// non-API source answers 503 no-healthy-backend meanwhile instead of 404.
//
// The request path reads and writes this state through exported accessors
// (Route.State, Backend.State and their methods); it judges (when a
// backend is ejected, when to retry), the router keeps the record.
// Another layer's per-route data that must live and die with the state
// (the request path's metric handles) is a RouteState Attachment.
//
// # Active health checks
//
// Active health checks stay here rather than in router/proxy: a checker
// is background work owned by a route's state — started, reconfigured and
// stopped by Update and by the grace sweep, under the router's lock — and
// its only output is the backend's down flag. In the request path it would
// need to watch snapshot changes to know when to start and stop. Passive
// health, which judges real requests, is the request path's.
//
// # Observability
//
// Breaker transitions, route changes and diagnostic changes are zerolog
// events and go to a bounded, non-blocking event bus (Subscribe) that
// counts what slow subscribers lose. RunHistory samples every breaker's
// own counters on a ticker into a small ring per breaker (History, the
// dashboard's sparklines) and publishes each sample as a history event;
// the request path does nothing for it. The router's Prometheus series
// (breakers, backend rotation, diagnostics, dropped events) are registered
// on the injected Registerer; the request metrics are router/proxy's.
package router
