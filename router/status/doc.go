// Package status is the read model of the running router: the views that
// the API, dashboards and tests consume — an entrypoint as routed with its
// backends' health (EntrypointStatus, BackendStatus), a circuit breaker's
// state (BreakerStatus) and recent traffic (History), the events the
// router publishes (Event and its payloads) — and the vocabulary of the
// router's controls (the breaker actions, ErrNotFound).
//
// The router fills these values; nothing here reads or changes runtime
// state. Consumers depend on this package and on router/config, never on
// the router or the request path, so that the data flows one way. It
// imports only the config model, diagnostics and the standard library.
package status
