package labels

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
)

// Parser turns containers into entrypoints.
// STUB: the label-grammar work replaces this file.
type Parser struct {
	// Prefix is the label prefix, "levee" by default.
	Prefix string
	// ExposedByDefault routes containers without <prefix>.enable=true.
	ExposedByDefault bool
	// OwnNetworks are the networks Levee's own container is attached to
	// (empty when Levee does not run in a container).
	OwnNetworks []string
	// Offline skips address resolution (`levee validate` on compose files).
	Offline bool
}

// Parse turns the complete current set of containers into entrypoints and
// diagnostics. It is a pure function of its input, deterministic in order.
func (p Parser) Parse(containers []Container) ([]router.Entrypoint, []diagnostics.Diagnostic) {
	return nil, nil
}
