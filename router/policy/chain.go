package policy

import (
	"net/http"
	"slices"
)

// Chain is a route's compiled policies in stage order. A nil or empty
// Chain runs nothing: the proxy checks Empty and goes straight to the
// exchange, so a route without policies costs what it did before.
type Chain struct {
	policies []Policy
}

// NewChain sorts ps by Stage (stably: policies of one stage keep the
// order given) and returns the chain.
func NewChain(ps []Policy) *Chain {
	if len(ps) == 0 {
		return nil
	}
	ps = slices.Clone(ps)
	slices.SortStableFunc(ps, func(a, b Policy) int { return int(a.Stage()) - int(b.Stage()) })
	return &Chain{policies: ps}
}

// Empty reports whether the chain has no policy.
func (c *Chain) Empty() bool { return c == nil || len(c.policies) == 0 }

// Policies returns the chain's policies in the order they run (a copy).
func (c *Chain) Policies() []Policy {
	if c == nil {
		return nil
	}
	return slices.Clone(c.policies)
}

// Serve runs the chain for one request; final (the proxy's exchange) is
// the last next. The steps are allocated in one slice per request.
func (c *Chain) Serve(w http.ResponseWriter, r *http.Request, final http.Handler) {
	if c.Empty() {
		final.ServeHTTP(w, r)
		return
	}
	steps := make([]step, len(c.policies))
	for i := range steps {
		steps[i] = step{steps: steps, i: i, c: c, final: final}
	}
	steps[0].ServeHTTP(w, r)
}

// step runs policy i with step i+1 (or final) as its next.
type step struct {
	steps []step
	i     int
	c     *Chain
	final http.Handler
}

func (s *step) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var next http.Handler = s.final
	if s.i+1 < len(s.steps) {
		next = &s.steps[s.i+1]
	}
	s.c.policies[s.i].Serve(w, r, next)
}
