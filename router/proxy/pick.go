package proxy

import (
	"slices"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
)

// eligible is the exchange's eligibility filter for the balancer: not
// excluded, healthy and not ejected (level < 2), not tried yet (level < 1),
// its breaker not open.
func (x *exchange) eligible(b *router.Backend) bool {
	if x.excluded != nil && x.excluded == b || x.moreExcluded != nil && slices.Contains(*x.moreExcluded, b) {
		return false
	}
	if x.level < 2 && (b.State().Down() || b.State().Ejected(x.now)) {
		return false
	}
	if x.level < 1 && x.wasTried(b) {
		return false
	}
	if g := b.State().Guard(); g != nil && g.Breaker().State() == breaker.Open {
		x.sawOpen = true
		return false
	}
	return true
}

func (x *exchange) wasTried(b *router.Backend) bool {
	for _, t := range x.tried {
		if t == b {
			return true
		}
	}
	for _, t := range x.moreTried {
		if t == b {
			return true
		}
	}
	return false
}

func (x *exchange) exclude(b *router.Backend) {
	if x.excluded == nil {
		x.excluded = b
		return
	}
	if x.moreExcluded == nil {
		x.moreExcluded = new([]*router.Backend)
	}
	*x.moreExcluded = append(*x.moreExcluded, b)
}

func (x *exchange) markTried(b *router.Backend) {
	for i := range x.tried {
		if x.tried[i] == nil {
			x.tried[i] = b
			return
		}
	}
	x.moreTried = append(x.moreTried, b)
}

// pick asks the balancer, relaxing eligibility step by step. On a sticky
// route the client's cookie is asked first (pick_sticky.go), and a
// backend the balancer picks is named in a new cookie.
func (x *exchange) pick() *router.Backend {
	cfg := x.route.Config()
	sticky := cfg.Transform.Sticky
	if sticky != nil {
		x.level = 0
		if b := x.stickyPick(sticky); b != nil {
			return b
		}
	}
	lb := balancerFor(cfg.LoadBalancer)
	bs, st := x.route.Backends(), x.route.State().Balancer()
	for x.level = 0; x.level < 3; x.level++ {
		if b := lb.pick(bs, st, x); b != nil {
			if sticky != nil {
				x.issueSticky(sticky, b)
			}
			return b
		}
	}
	return nil
}

func (x *exchange) noteOpen(ra time.Duration) {
	x.sawOpen = true
	if x.openRetryAfter == 0 || ra < x.openRetryAfter {
		x.openRetryAfter = ra
	}
}
