package api

import (
	"github.com/levee-proxy/levee/api/store"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// Router is the part of the router runtime the API reads and controls.
// *router.Router satisfies it (cmd/levee checks); tests use a fake.
type Router interface {
	// Entrypoints returns the merged entrypoints of every source, with
	// backend health, breaker state and diagnostics.
	Entrypoints() []status.EntrypointStatus
	// Entrypoint returns one merged entrypoint by id.
	Entrypoint(id string) (status.EntrypointStatus, bool)
	// Diagnostics returns the current diagnostics of every source,
	// including those the router itself made (collisions).
	Diagnostics() []diagnostics.Diagnostic
	// Breakers returns the status of every breaker.
	Breakers() []status.BreakerStatus
	// Breaker returns a route's breaker.
	Breaker(route string) (status.BreakerStatus, bool)
	// ControlBreaker applies "open", "close" or "reset" to a route's
	// breakers; who is recorded in the router's log and events. An unknown
	// route is an error wrapping status.ErrNotFound.
	ControlBreaker(route, action, who string) error
	// History returns every breaker's recent requests and failures, the
	// router's in-memory ring of samples.
	History() status.History
	// Policies returns the named policies of every source in force, one
	// per name, sorted by name.
	Policies() []config.Policy
	// Traffic returns the recent traffic of every route that served
	// requests, and RouteTraffic one route's (false: no such route): the
	// router's in-memory rings.
	Traffic() status.Traffic
	RouteTraffic(id string) (status.RouteTraffic, bool)
	// RecentEvents returns the last events the bus carried (history
	// samples excluded), oldest first.
	RecentEvents() status.RecentEvents
	// SubscribeAfter returns a bounded event stream, the remembered events
	// published after the event with id lastID (none for ""), taken in
	// the same instant, and a function that ends the subscription (and
	// closes the channel).
	SubscribeAfter(buffer int, lastID string) (<-chan status.Event, []status.Event, func())
}

// Sink and Codec are the store's (package api/store): the server decodes
// with the same Codec the store re-decodes with at start.
type (
	Sink  = store.Sink
	Codec = store.Codec
)

// StandardCodec is config.DecodeEntrypoint and config.EncodeEntrypoint: the
// validator labels go through too.
func StandardCodec() Codec {
	return Codec{Decode: config.DecodeEntrypoint, Encode: config.EncodeEntrypoint}
}
