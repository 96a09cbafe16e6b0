// Package router holds Levee's config model (Entrypoint, Backend, …), its
// validation, the route table and the proxying handler.
//
// Each config source hands the router its complete current list of
// entrypoints (Update). The router merges all sources, detects collisions,
// and builds an immutable Snapshot that requests read through an
// atomic.Pointer: no lock on the request path and no request ever sees half a
// config. Runtime state (breakers, balancer counters, health) lives outside
// the snapshot, keyed by route id, so it survives reloads.
package router
