package proxy

import (
	"math/rand/v2"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// eligibility says whether a backend may be picked for the current attempt.
// It is the second composable piece next to the balancer: the balancer
// knows the policy (weights, in-flight counts), the eligibility knows the
// request (backends already tried, health, breakers).
type eligibility interface {
	eligible(b *router.Backend) bool
}

// balancer picks one backend among the eligible ones of a route, honouring
// weights (weight 0 is never picked). It returns nil when none is eligible.
// A balancer is stateless: what it keeps across requests and snapshots
// (weights, a rotating start) is the route's router.BalancerState.
type balancer interface {
	pick(bs []*router.Backend, st *router.BalancerState, e eligibility) *router.Backend
}

// The policies, shared by every route.
var (
	roundRobin   balancer = smoothRoundRobin{}
	random       balancer = randomBalancer{}
	twoChoices   balancer = powerOfTwo{}
	fewestActive balancer = leastConnections{}
)

// balancerFor returns the policy for name; unknown names (which the
// validator never lets through) get the default, round robin.
func balancerFor(name string) balancer {
	switch name {
	case config.Random:
		return random
	case config.PowerOfTwo:
		return twoChoices
	case config.LeastConnections:
		return fewestActive
	default:
		return roundRobin
	}
}

// smoothRoundRobin is nginx's smooth weighted round robin: weights 5,1,1
// give a a b a c a a rather than a a a a a b c. Its per-backend "current
// weight" lives in the backend state so it survives reloads.
type smoothRoundRobin struct{}

func (smoothRoundRobin) pick(bs []*router.Backend, st *router.BalancerState, e eligibility) *router.Backend {
	st.Lock()
	defer st.Unlock()
	var best *router.Backend
	var bestCur *int64
	total := int64(0)
	for _, b := range bs {
		if b.Weight() <= 0 || !e.eligible(b) {
			continue
		}
		w := int64(b.Weight())
		cur := b.State().RoundRobinWeight()
		*cur += w
		total += w
		if best == nil || *cur > *bestCur {
			best, bestCur = b, cur
		}
	}
	if best != nil {
		*bestCur -= total
	}
	return best
}

// randomBalancer picks with probability proportional to weight.
type randomBalancer struct{}

func (randomBalancer) pick(bs []*router.Backend, _ *router.BalancerState, e eligibility) *router.Backend {
	return weightedRandom(bs, e, nil)
}

// weightedRandom picks an eligible backend other than not, with
// probability proportional to weight.
func weightedRandom(bs []*router.Backend, e eligibility, not *router.Backend) *router.Backend {
	total := 0
	for _, b := range bs {
		if b.Weight() > 0 && b != not && e.eligible(b) {
			total += b.Weight()
		}
	}
	if total == 0 {
		return nil
	}
	n := rand.IntN(total)
	for _, b := range bs {
		if b.Weight() > 0 && b != not && e.eligible(b) {
			if n < b.Weight() {
				return b
			}
			n -= b.Weight()
		}
	}
	return nil // unreachable unless eligibility changed between the passes
}

// powerOfTwo draws two backends at random (by weight) and keeps the one
// with fewer requests in flight per unit of weight.
type powerOfTwo struct{}

func (powerOfTwo) pick(bs []*router.Backend, _ *router.BalancerState, e eligibility) *router.Backend {
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
type leastConnections struct{}

func (leastConnections) pick(bs []*router.Backend, st *router.BalancerState, e eligibility) *router.Backend {
	n := len(bs)
	if n == 0 {
		return nil
	}
	start := int(st.Next() % uint32(n))
	var best *router.Backend
	for i := range n {
		b := bs[(start+i)%n]
		if b.Weight() <= 0 || !e.eligible(b) {
			continue
		}
		if best == nil || lessLoaded(b, best) {
			best = b
		}
	}
	return best
}

// lessLoaded compares in-flight/weight without dividing.
func lessLoaded(a, b *router.Backend) bool {
	return a.State().InFlight()*int64(b.Weight()) < b.State().InFlight()*int64(a.Weight())
}
