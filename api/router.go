package api

import (
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
	// Subscribe returns a bounded event stream and a function that ends the
	// subscription (and closes the channel).
	Subscribe(buffer int) (<-chan status.Event, func())
}

// Sink receives the API entrypoints: the complete set once the store is
// open (Update), then what each write changed (Patch); *router.Router
// satisfies it (cmd/levee checks).
type Sink interface {
	Update(u config.SourceUpdate)
	Patch(p config.SourcePatch)
}

// Codec decodes API payloads into entrypoints and encodes them back to the
// canonical payload: the config package's one validator behind function
// values, so this package can be tested with a fake. StandardCodec returns
// the real one.
type Codec struct {
	// Decode validates a payload. Field problems come back as diagnostics
	// (with fallbacks applied); a structural problem is an error, a
	// *config.InputError carrying the HTTP status (400 or 422).
	Decode func(format config.Format, body []byte, src diagnostics.Source) (config.Entrypoint, []diagnostics.Diagnostic, error)
	// Encode renders an entrypoint as the canonical JSON payload that
	// Decode accepts back unchanged.
	Encode func(ep config.Entrypoint) ([]byte, error)
}

// StandardCodec is config.DecodeEntrypoint and config.EncodeEntrypoint: the
// validator labels go through too.
func StandardCodec() Codec {
	return Codec{Decode: config.DecodeEntrypoint, Encode: config.EncodeEntrypoint}
}
