package policy

import (
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// A Kind is one kind of policy as the router knows it: its name, its
// place in the chain and how one route's entrypoint compiles to it. Each
// policy package declares its Kind (kind.go); the router compiles a
// route by walking its list of kinds (router.DefaultPolicies), so adding
// a policy adds a package and a line to that list, never a branch in the
// router.
type Kind struct {
	// Name is the policy's name in metrics and logs; retained state is
	// kept under it.
	Name string
	// Stage is where the compiled policy runs.
	Stage Stage
	// Compile returns the route's policy, or nil when the route does not
	// have it (or the validator refused its config and the policy fails
	// open by design), and what only the router can report about it. An
	// access policy whose config is unusable compiles to a policy that
	// denies every request, never to nil.
	Compile func(in Input) (Policy, []diagnostics.Diagnostic)
}

// Input is what a Kind compiles from: one route's validated entrypoint,
// the env its policy runs in, and the state the route keeps across
// snapshots.
type Input struct {
	Entrypoint *config.Entrypoint
	Env        Env
	// Source names the route in the diagnostics a Kind reports.
	Source diagnostics.Source
	// State is the route's retained policy state (see Retained).
	State State
}

// Diag is a diagnostic about the input's route.
func (in Input) Diag(code diagnostics.Code, key, fallback, msg, hint string) diagnostics.Diagnostic {
	return diagnostics.New(code, in.Source, key, "", fallback, msg, hint)
}

// State keeps a route's policy state across snapshots (token buckets,
// in-flight counters, a credentials cache), so that a rebuild does not
// reset a limit. The router implements it per route and drops the state
// of policies the route no longer has.
type State interface {
	// Retain returns the value kept under name when keep accepts it,
	// else stores and returns create().
	Retain(name string, keep func(any) bool, create func() any) any
}

// Retained returns the *T kept in s under name, creating it on first use
// (or when the name held another type).
func Retained[T any](s State, name string, create func() *T) *T {
	return s.Retain(name, func(v any) bool { _, ok := v.(*T); return ok }, func() any { return create() }).(*T)
}

// IsTransform reports whether k's policies change a request or its
// response rather than admit or refuse it.
func (k Kind) IsTransform() bool { return k.Stage >= StageRedirect }
