package ratelimit

import (
	"context"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy/fleetsync"
)

// A fleet rate limit (rateLimit.scope=fleet) is one limit enforced
// together by the replicas sharing a breaker store. No request waits on
// the store: each replica admits from a local bucket per key, and every
// flush interval reconciles the keys it spent from with the store's
// fleet bucket (SharedBuckets), which charges what each replica spent,
// refills by the store's elapsed time at the route's average up to its
// burst, and answers what the fleet has left and how many replicas
// spend from the route. The local bucket then holds its share of that,
// and refills at its share of the average until the next reconciliation.
// The reconciliation loop, its bounds and its failure handling are
// package fleetsync's; a key spent from beyond what one flush sends
// waits for a later flush (its spending is kept and charged then).
//
// Accuracy: the fleet admits the limit give or take about one flush
// interval's traffic per replica (a replica spends its share before it
// hears that the others spent theirs), and a key new to a replica starts
// with its share by the route's replica count at its last reconciliation
// (the whole bucket on a route this replica never reconciled) until the
// key's own first reconciliation.
// A share is at least one token, so a burst smaller than the replica
// count admits up to one request per replica at once.
//
// Failure: a reconciliation that fails or is late (Timeout) makes every
// fleet limit of the replica local (each key gets the whole average and
// burst on this replica: the fleet fails to local limits, never open)
// with W059, until a reconciliation succeeds. What was spent meanwhile
// is not charged to the fleet.

// DiagnosticsSource is the provider name of the fleet limits'
// diagnostics.
const DiagnosticsSource = "rate-limit-store"

// SharedBuckets is the fleet's side of the rate limits: the store every
// replica reconciles its buckets with.
type SharedBuckets interface {
	// Reconcile charges each spend to its fleet bucket and answers, for
	// each in order, what the fleet has left. It is atomic per bucket.
	Reconcile(ctx context.Context, spends []Spend) ([]Budget, error)
}

// Spend is what one replica admitted from one key since its last
// reconciliation, with the bucket's parameters.
type Spend struct {
	Route string
	// Key names the bucket within the route (Criterion.FleetName).
	Key   string
	Spent int64
	// Rate is tokens a second; Burst the bucket's size.
	Rate  float64
	Burst int
}

// Budget is the fleet bucket after a reconciliation.
type Budget struct {
	// Tokens is what the fleet has left (negative: overspent).
	Tokens float64
	// Replicas is how many replicas reconcile the route (at least 1).
	Replicas int
}

// FleetOptions configure a Fleet.
type FleetOptions struct {
	// Shared is the store; required.
	Shared SharedBuckets
	// Now tells the time (default time.Now).
	Now func() time.Time
	// Options: the interval, deadline and key bound of the
	// reconciliations, and where their diagnostics and logs go.
	fleetsync.Options
}

// Fleet reconciles the fleet rate limits of one process. Routes join it
// when their policy is compiled and leave it when their state is
// dropped (it holds them weakly).
type Fleet struct {
	*fleetsync.Reconciler[fleetRoute, pending, Spend, Budget]
}

// NewFleet returns a Fleet; Run reconciles until its context ends.
func NewFleet(o FleetOptions) *Fleet {
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Fleet{fleetsync.New(o.Options, fleetsync.Limit[fleetRoute, pending, Spend, Budget]{
		Names: fleetsync.Names{
			Limits: "rate limits", Reconciliation: "rate-limit reconciliation", Event: "rate_limit_store",
			Source: diagnostics.Source{Provider: DiagnosticsSource, ObjectName: "rateLimit"}, Answers: "budgets",
		},
		Take:   (*fleetRoute).take,
		Report: func(p pending) Spend { return p.spend },
		Send:   o.Shared.Reconcile,
		Apply: func(batch []pending, budgets []Budget) {
			now := o.Now()
			for i, p := range batch {
				p.b.apply(now, p.params, budgets[i])
				p.route.replicas.Store(int64(max(budgets[i].Replicas, 1)))
			}
		},
	})}
}

// pending is one bucket's spending taken for a reconciliation.
type pending struct {
	route  *fleetRoute
	b      *fleetBucket
	params *fleetParams
	spend  Spend
}
