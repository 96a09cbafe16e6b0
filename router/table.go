package router

// The route table's types: Route (one entrypoint compiled for matching),
// hostTable (the routes of one host pattern) and Snapshot (every host's
// table, immutable once built). Building is table_build.go, compiling a
// route table_compile.go, matching table_match.go, precedence and
// collisions table_collide.go.

import (
	"crypto/tls"
	"regexp"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/shardmap"
)

// Route is one entrypoint compiled for matching. Routes are immutable once a
// Snapshot holds them; the mutable runtime state a route points to (balancer,
// health, breaker) lives in the state registry and outlives the Route.
type Route struct {
	ep     config.Entrypoint
	prefix string // match key: Path without a trailing slash, "/" for the root
	// folded: the prefix is matched case-insensitively (foldPath), in
	// hostTable.byFolded under foldPath(prefix).
	folded  bool
	regex   *regexp.Regexp
	methods []string
	// ghost routes belong to entrypoints that disappeared recently: they
	// answer 503 no-healthy-backend for a grace period instead of 404, and
	// lose to every live route.
	ghost bool

	state    *RouteState
	backends []*Backend // in Entrypoint.Backends order
	// cbParams are the validated breaker parameters, for classifying
	// responses without asking the breaker.
	cbParams breaker.Params
	// chain is the route's policies in stage order (nil without any).
	chain *policy.Chain
	// fallback answers what the open breaker refuses (fallback.go).
	fallback *Route
	// refs are the routes its policies name (references.go).
	refs []policy.Reference
	// backendTLS is the client configuration of the backend connections
	// (scheme=https), compiled once per route; backendTLSErr says why it
	// could not be (backendtls.go).
	backendTLS    *tls.Config
	backendTLSErr error
	// compileDiags are compileRoute's and the policies' diagnostics, kept
	// for the rebuilds that reuse the route.
	compileDiags []diagnostics.Diagnostic
}

// ID returns the entrypoint id the route was built from.
func (r *Route) ID() string { return r.ep.ID }

// Entrypoint returns the entrypoint the route was built from. Its slices are
// shared with the snapshot and must not be modified.
func (r *Route) Entrypoint() config.Entrypoint { return r.ep }

// hostTable indexes the routes of one host pattern by path prefix. Matching
// walks the request path from its longest segment prefix to "/", so the
// longest prefix wins and the cost is one map lookup per path segment,
// whatever the number of routes.
type hostTable struct {
	byPrefix map[string][]*Route // each slice sorted by Route.before
	// byFolded holds the routes with path.caseInsensitive, under their
	// folded prefix; nil while the host has none.
	byFolded map[string][]*Route
	// diags are the table's collisions (W018), kept with it so that a
	// snapshot sharing the table need not check it again.
	diags []diagnostics.Diagnostic
}

// Snapshot is an immutable route table. Requests read the current one
// through an atomic pointer, so they never lock and never see half a config.
//
// Host precedence: an exact host beats a wildcard, a longer wildcard suffix
// beats a shorter one, and a "*" catch-all comes last; within the chosen
// host, the longest path prefix wins, then priority, then the oldest
// entrypoint, then the smallest id. A host whose routes all reject the
// request (path, method or regex) falls through to the next host pattern.
type Snapshot struct {
	exact    shardmap.Map[*hostTable]
	wildcard shardmap.Map[*hostTable] // keyed by the suffix after "*."
	any      *hostTable
	routes   []*Route // sorted by id; ghosts included
	byID     shardmap.Map[*Route]
	// collided are the hosts whose table has collisions (W018), so that
	// gathering them does not walk every table.
	collided map[string]bool
	// redirects: some route redirects plain listeners to HTTPS.
	redirects bool
	// named are the routes policies name, by the name (references.go).
	named map[string]*Route
	// tcp holds the TCP routes by listener name (tcp.go).
	tcp map[string]*tcpTable
	// udp are the UDP routes by listener name, in precedence order.
	udp map[string][]*Route
}

// listenerFilter keeps the routes that answer on a listener.
type listenerFilter func(r *Route, l *Listener) bool
