package router

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

type allEligible struct{}

func (allEligible) eligible(*backend) bool { return true }

type notDown struct{}

func (notDown) eligible(b *backend) bool { return !b.st.down.Load() }

func pool(weights ...int) []*backend {
	bs := make([]*backend, len(weights))
	for i, w := range weights {
		hp := fmt.Sprintf("10.0.0.%d:80", i+1)
		bs[i] = &backend{hostport: hp, weight: w, st: &backendState{key: hp}}
	}
	return bs
}

func counts(b balancer, bs []*backend, e eligibility, n int) map[string]int {
	out := map[string]int{}
	for range n {
		p := b.pick(bs, e)
		if p == nil {
			out["<nil>"]++
			continue
		}
		out[p.hostport]++
	}
	return out
}

func TestSmoothRoundRobinIsSmoothAndExact(t *testing.T) {
	rs := &routeState{}
	b := newBalancer(config.RoundRobin, rs)
	bs := pool(5, 1, 1)
	var seq []string
	for range 7 {
		seq = append(seq, strings.TrimSuffix(strings.TrimPrefix(b.pick(bs, allEligible{}).hostport, "10.0.0."), ":80"))
	}
	// nginx's smooth weighted round robin: a a b a c a a, spread out.
	if got := strings.Join(seq, ""); got != "1121311" {
		t.Fatalf("sequence %s, want 1121311", got)
	}
}

func TestBalancersHonourWeights(t *testing.T) {
	for _, policy := range []string{config.RoundRobin, config.Random, config.PowerOfTwo, config.LeastConnections} {
		t.Run(policy, func(t *testing.T) {
			rs := &routeState{}
			b := newBalancer(policy, rs)
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
			b := newBalancer(policy, &routeState{})
			bs := pool(100, 100)
			bs[0].st.inflight.Store(10)
			got := counts(b, bs, allEligible{}, 200)
			if got["10.0.0.2:80"] != 200 {
				t.Fatalf("busy backend picked: %v", got)
			}
			// Weight counts: 10 in flight on weight 1000 is less loaded
			// than 1 on weight 10.
			bs = pool(1000, 10)
			bs[0].st.inflight.Store(10)
			bs[1].st.inflight.Store(1)
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
			b := newBalancer(policy, &routeState{})
			bs := pool(100, 100, 100)
			bs[0].st.down.Store(true)
			bs[2].st.down.Store(true)
			if got := counts(b, bs, notDown{}, 50); got["10.0.0.2:80"] != 50 {
				t.Fatalf("picked an ineligible backend: %v", got)
			}
			bs[1].st.down.Store(true)
			if got := counts(b, bs, notDown{}, 5); got["<nil>"] != 5 {
				t.Fatalf("picked with nothing eligible: %v", got)
			}
		})
	}
}
