package router

import (
	"slices"
	"time"

	"github.com/levee-proxy/levee/breaker"
)

// eligible is the exchange's eligibility filter for the balancer: not
// excluded, healthy and not ejected (level < 2), not tried yet (level < 1),
// its breaker not open.
func (x *exchange) eligible(b *backend) bool {
	if x.excluded != nil && x.excluded == b || x.moreExcluded != nil && slices.Contains(x.moreExcluded, b) {
		return false
	}
	if x.level < 2 && (b.st.down.Load() || b.st.ejected(x.now)) {
		return false
	}
	if x.level < 1 && x.wasTried(b) {
		return false
	}
	if g := b.st.guard.Load(); g != nil && g.b.State() == breaker.Open {
		x.sawOpen = true
		return false
	}
	return true
}

func (x *exchange) wasTried(b *backend) bool {
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

func (x *exchange) exclude(b *backend) {
	if x.excluded == nil {
		x.excluded = b
		return
	}
	x.moreExcluded = append(x.moreExcluded, b)
}

func (x *exchange) markTried(b *backend) {
	for i := range x.tried {
		if x.tried[i] == nil {
			x.tried[i] = b
			return
		}
	}
	x.moreTried = append(x.moreTried, b)
}

// pick asks the balancer, relaxing eligibility step by step.
func (x *exchange) pick() *backend {
	for x.level = 0; x.level < 3; x.level++ {
		if b := x.route.balancer.pick(x.route.backends, x); b != nil {
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
