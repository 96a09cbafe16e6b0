package store

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Sink receives the API entrypoints: the complete set once the store is
// open (Update), then what each write changed (Patch); *router.Router
// satisfies it (cmd/levee checks).
type Sink interface {
	Update(u config.SourceUpdate)
	Patch(p config.SourcePatch)
}

// Codec decodes API payloads into entrypoints and encodes them back to the
// canonical payload: the config package's one validator behind function
// values, so the store and the API can be tested with a fake. api.StandardCodec returns
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
