package router

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/levee-proxy/levee/router/config"
)

// eligibility says whether a backend may be picked for the current attempt.
// It is the second composable piece next to the balancer: the balancer
// knows the policy (weights, in-flight counts), the eligibility knows the
// request (backends already tried, health, breakers).
type eligibility interface {
	eligible(b *backend) bool
}

// balancer picks one backend among the eligible ones of a route, honouring
// weights (weight 0 is never picked). It returns nil when none is eligible.
type balancer interface {
	pick(bs []*backend, e eligibility) *backend
}

// newBalancer returns the policy for name; unknown names (which the
// validator never lets through) get the default, round robin.
func newBalancer(name string, rs *routeState) balancer {
	switch name {
	case config.Random:
		return randomBalancer{}
	case config.PowerOfTwo:
		return powerOfTwo{}
	case config.LeastConnections:
		return &leastConnections{}
	default:
		return &smoothRoundRobin{mu: &rs.lbMu}
	}
}

// smoothRoundRobin is nginx's smooth weighted round robin: weights 5,1,1
// give a a b a c a a rather than a a a a a b c. Its per-backend "current
// weight" lives in the backend state so it survives reloads.
type smoothRoundRobin struct {
	mu *sync.Mutex
}

func (p *smoothRoundRobin) pick(bs []*backend, e eligibility) *backend {
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *backend
	total := int64(0)
	for _, b := range bs {
		if b.weight <= 0 || !e.eligible(b) {
			continue
		}
		w := int64(b.weight)
		b.st.current += w
		total += w
		if best == nil || b.st.current > best.st.current {
			best = b
		}
	}
	if best != nil {
		best.st.current -= total
	}
	return best
}

// randomBalancer picks with probability proportional to weight.
type randomBalancer struct{}

func (randomBalancer) pick(bs []*backend, e eligibility) *backend {
	return weightedRandom(bs, e, nil)
}

// weightedRandom picks an eligible backend other than not, with
// probability proportional to weight.
func weightedRandom(bs []*backend, e eligibility, not *backend) *backend {
	total := 0
	for _, b := range bs {
		if b.weight > 0 && b != not && e.eligible(b) {
			total += b.weight
		}
	}
	if total == 0 {
		return nil
	}
	n := rand.IntN(total)
	for _, b := range bs {
		if b.weight > 0 && b != not && e.eligible(b) {
			if n < b.weight {
				return b
			}
			n -= b.weight
		}
	}
	return nil // unreachable unless eligibility changed between the passes
}

// powerOfTwo draws two backends at random (by weight) and keeps the one
// with fewer requests in flight per unit of weight.
type powerOfTwo struct{}

func (powerOfTwo) pick(bs []*backend, e eligibility) *backend {
	a := weightedRandom(bs, e, nil)
	if a == nil {
		return nil
	}
	b := weightedRandom(bs, e, a)
	if b == nil || lessLoaded(a, b) {
		return a
	}
	return b
}

// leastConnections picks the backend with the fewest requests in flight per
// unit of weight; ties rotate so that an idle route still spreads load.
type leastConnections struct {
	next atomic.Uint32
}

func (p *leastConnections) pick(bs []*backend, e eligibility) *backend {
	n := len(bs)
	if n == 0 {
		return nil
	}
	start := int(p.next.Add(1) % uint32(n))
	var best *backend
	for i := range n {
		b := bs[(start+i)%n]
		if b.weight <= 0 || !e.eligible(b) {
			continue
		}
		if best == nil || lessLoaded(b, best) {
			best = b
		}
	}
	return best
}

// lessLoaded compares in-flight/weight without dividing.
func lessLoaded(a, b *backend) bool {
	return a.st.inflight.Load()*int64(b.weight) < b.st.inflight.Load()*int64(a.weight)
}
