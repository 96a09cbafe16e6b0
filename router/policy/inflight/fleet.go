package inflight

import (
	"context"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy/fleetsync"
)

// A fleet in-flight limit (inFlight.scope=fleet) is one limit enforced
// together by the replicas sharing a breaker store: at most amount
// requests of a source under way over every replica. No request waits on
// the store: each replica counts its own requests in flight per key
// exactly, and every flush interval reports the counts of the keys it
// has seen to the store (SharedCounts), which keeps each replica's count
// for a while (a dead replica's counts vanish) and answers the sum of
// the other replicas' counts. A request is admitted while its key's
// local count plus the others' last known sum stays within amount.
// The reconciliation loop, its bounds and its failure handling are
// package fleetsync's; with more keys in use than one flush sends, the
// flushes take them in turn.
//
// Accuracy: a replica hears of the others' requests only at its next
// reconciliation, so the fleet may have more than amount in flight by
// what the replicas admitted within about one flush interval (never more
// than amount per replica: a replica's own count never exceeds it), and
// it may refuse for up to an interval after the others' requests ended.
//
// Failure: a reconciliation that fails or is late (Timeout) makes every
// fleet in-flight limit of the replica local (each replica admits up to
// amount alone: fails to local, never open) with W059, until a
// reconciliation succeeds.

// DiagnosticsSource is the provider name of the fleet in-flight limits'
// diagnostics.
const DiagnosticsSource = "in-flight-store"

// SharedCounts is the fleet's side of the in-flight limits: the store
// every replica reports its counts to.
type SharedCounts interface {
	// Report records this replica's count of each key and answers, for
	// each in order, the sum of the other replicas' counts of that key.
	// No counts is a health check.
	Report(ctx context.Context, counts []Count) ([]int64, error)
}

// Count is one key's requests in flight on this replica.
type Count struct {
	Route string
	// Key names the counter within the route (ratelimit
	// Criterion.FleetName).
	Key      string
	InFlight int64
}

// FleetOptions configure a Fleet.
type FleetOptions struct {
	// Shared is the store; required.
	Shared SharedCounts
	// Options: the interval, deadline and key bound of the
	// reconciliations, and where their diagnostics and logs go.
	fleetsync.Options
}

// Fleet reconciles the fleet in-flight limits of one process. Routes
// join it when their policy is compiled and leave it when their state is
// dropped (it holds them weakly).
type Fleet struct {
	*fleetsync.Reconciler[fleetRoute, pending, Count, int64]
}

// NewFleet returns a Fleet; Run reconciles until its context ends.
func NewFleet(o FleetOptions) *Fleet {
	return &Fleet{fleetsync.New(o.Options, fleetsync.Limit[fleetRoute, pending, Count, int64]{
		Names: fleetsync.Names{
			Limits: "in-flight limits", Reconciliation: "in-flight reconciliation", Event: "in_flight_store",
			Source: diagnostics.Source{Provider: DiagnosticsSource, ObjectName: "inFlight"}, Answers: "counts",
		},
		Take:   (*fleetRoute).take,
		Report: func(p pending) Count { return p.count },
		Send:   o.Shared.Report,
		Apply:  applyOthers,
	})}
}

// pending is one counter taken for a reconciliation.
type pending struct {
	route *fleetRoute
	c     *fleetCounter
	count Count
}

// applyOthers stores the others' sums. A key that this replica counts
// none of and the others none either is dropped from its route's list
// until its next request.
func applyOthers(batch []pending, others []int64) {
	idle := map[*fleetRoute][]*fleetCounter{}
	for i, p := range batch {
		o := max(others[i], 0)
		p.c.others.Store(o)
		if p.count.InFlight == 0 && o == 0 {
			idle[p.route] = append(idle[p.route], p.c)
		}
	}
	for r, cs := range idle {
		r.prune(cs)
	}
}
