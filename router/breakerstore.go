package router

import (
	"context"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/status"
)

// BreakerStore shares breakers with the other replicas of a fleet
// (package breaker/fleet implements it over Redis). The router joins every
// breaker it creates and leaves when it drops it; the request path never
// calls the store.
type BreakerStore interface {
	// Join shares b under name; control applies an operator action made
	// on any replica to this one. leave stops sharing.
	Join(name string, b *breaker.Breaker, control func(action, by string)) (leave func())
	// Control applies an operator action fleet-wide (and, before it
	// returns, here through control). An error means it could not.
	Control(ctx context.Context, name, action, by string) error
	// Shared says whether the breaker follows the fleet now, with the
	// fleet window's figures.
	Shared(name string) (fleet bool, windowTotal, windowFailures int)
}

// joinStore shares a new guard's breaker through the breaker store and
// returns how to stop (a no-op without a store).
func (r *Router) joinStore(g *Guard) (leave func()) {
	st := r.opts.BreakerStore
	if st == nil {
		return func() {}
	}
	return st.Join(g.name(), g.b, func(action, by string) { applyControl(g, action, by) })
}

// applyControl applies an operator action that the breaker store relays
// from any replica, naming its author in the event it causes, as
// ControlBreaker does for a local one. An unknown action does nothing.
func applyControl(g *Guard, action, by string) {
	var do func(*breaker.Breaker)
	switch action {
	case status.ActionOpen:
		do = (*breaker.Breaker).ForceOpen
	case status.ActionClose:
		do = (*breaker.Breaker).ForceClose
	case status.ActionReset:
		do = (*breaker.Breaker).Reset
	default:
		return
	}
	g.by.Store(&by)
	do(g.b)
	g.by.CompareAndSwap(&by, nil) // no transition (already there): forget it
}

// controlShared makes an operator action the fleet's: the store records
// and announces it and applies it here before returning (true). Without a
// store, or when the store cannot be reached (logged), it returns false
// and the caller applies the action to this replica only.
func (r *Router) controlShared(g *Guard, action, who string) bool {
	st := r.opts.BreakerStore
	if st == nil {
		return false
	}
	err := st.Control(context.Background(), g.name(), action, who)
	if err != nil {
		r.log.Warn().Str("event", "breaker_control_local").Str("route", g.route).Str("breaker", g.name()).Err(err).
			Msg("breaker store unavailable: the action applies to this replica only")
		return false
	}
	return true
}

// withStore adds to a breaker's view whether it follows the fleet, with
// the fleet window's figures.
func (r *Router) withStore(g *Guard, bs status.BreakerStatus) status.BreakerStatus {
	bs.Store = status.StoreLocal
	if st := r.opts.BreakerStore; st != nil {
		if fleet, total, failures := st.Shared(g.name()); fleet {
			bs.Store = status.StoreFleet
			bs.FleetWindowTotal, bs.FleetWindowFailures = total, failures
		}
	}
	return bs
}
