package proxy

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

type allEligible struct{}

func (allEligible) eligible(*router.Backend) bool { return true }

// notDown holds out the backends marked down in it (as active health
// checks would).
type notDown map[*router.Backend]bool

func (d notDown) eligible(b *router.Backend) bool { return !d[b] }

// pool returns the backends 10.0.0.1:80, 10.0.0.2:80, … of a route with
// the weights, with fresh state.
func pool(weights ...int) []*router.Backend {
	e := config.Entrypoint{ID: "pool", Name: "pool", Hosts: []string{"pool.test"}, Path: "/"}
	for i, w := range weights {
		e.Backends = append(e.Backends, config.Backend{Address: fmt.Sprintf("10.0.0.%d", i+1), Port: 80, Weight: w})
	}
	r := router.New(router.Options{})
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{e}})
	rt, _ := r.Snapshot().Route("pool")
	return rt.Backends()
}

func counts(b balancer, bs []*router.Backend, e eligibility, n int) map[string]int {
	out := map[string]int{}
	st := &router.BalancerState{}
	for range n {
		p := b.pick(bs, st, e)
		if p == nil {
			out["<nil>"]++
			continue
		}
		out[p.HostPort()]++
	}
	return out
}

func TestSmoothRoundRobinIsSmoothAndExact(t *testing.T) {
	b := balancerFor(config.RoundRobin)
	bs := pool(5, 1, 1)
	st := &router.BalancerState{}
	var seq []string
	for range 7 {
		seq = append(seq, strings.TrimSuffix(strings.TrimPrefix(b.pick(bs, st, allEligible{}).HostPort(), "10.0.0."), ":80"))
	}
	// nginx's smooth weighted round robin: a a b a c a a, spread out.
	if got := strings.Join(seq, ""); got != "1121311" {
		t.Fatalf("sequence %s, want 1121311", got)
	}
}

func TestBalancersHonourWeights(t *testing.T) {
	for _, policy := range []string{config.RoundRobin, config.Random, config.PowerOfTwo, config.LeastConnections} {
		t.Run(policy, func(t *testing.T) {
			b := balancerFor(policy)
			bs := pool(300, 100, 0)
			const n = 4000
			got := counts(b, bs, allEligible{}, n)
			if got["10.0.0.3:80"] != 0 {
				t.Fatalf("weight 0 was picked %d times", got["10.0.0.3:80"])
			}
			if policy == config.PowerOfTwo || policy == config.LeastConnections {
				// Without load these pick by in-flight count; every
				// backend with weight gets traffic.
				if got["10.0.0.1:80"] == 0 || got["10.0.0.2:80"] == 0 {
					t.Fatalf("distribution %v", got)
				}
				return
			}
			share := float64(got["10.0.0.1:80"]) / n
			if math.Abs(share-0.75) > 0.05 {
				t.Fatalf("weight 300 of 400 got share %.3f (%v)", share, got)
			}
		})
	}
}

func TestLeastLoadedPoliciesFollowInFlightPerWeight(t *testing.T) {
	for _, policy := range []string{config.PowerOfTwo, config.LeastConnections} {
		t.Run(policy, func(t *testing.T) {
			b := balancerFor(policy)
			bs := pool(100, 100)
			bs[0].State().AddInFlight(10)
			got := counts(b, bs, allEligible{}, 200)
			if got["10.0.0.2:80"] != 200 {
				t.Fatalf("busy backend picked: %v", got)
			}
			// Weight counts: 10 in flight on weight 1000 is less loaded
			// than 1 on weight 10.
			bs = pool(1000, 10)
			bs[0].State().AddInFlight(10)
			bs[1].State().AddInFlight(1)
			got = counts(b, bs, allEligible{}, 100)
			if got["10.0.0.1:80"] != 100 {
				t.Fatalf("per-weight load ignored: %v", got)
			}
		})
	}
}

func TestBalancersSkipIneligibleAndReturnNilWhenNone(t *testing.T) {
	for _, policy := range []string{config.RoundRobin, config.Random, config.PowerOfTwo, config.LeastConnections} {
		t.Run(policy, func(t *testing.T) {
			b := balancerFor(policy)
			bs := pool(100, 100, 100)
			down := notDown{bs[0]: true, bs[2]: true}
			if got := counts(b, bs, down, 50); got["10.0.0.2:80"] != 50 {
				t.Fatalf("picked an ineligible backend: %v", got)
			}
			down[bs[1]] = true
			if got := counts(b, bs, down, 5); got["<nil>"] != 5 {
				t.Fatalf("picked with nothing eligible: %v", got)
			}
		})
	}
}
