package ratelimit

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
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

// Defaults of FleetOptions.
const (
	DefaultFlushInterval = 200 * time.Millisecond
	// DefaultMaxKeysPerFlush bounds the keys one reconciliation sends; a
	// key spent from beyond it waits for a later flush (its spending is
	// kept and charged then).
	DefaultMaxKeysPerFlush = 4096
)

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
	// FlushInterval is how often buckets are reconciled (default
	// DefaultFlushInterval); Timeout bounds one reconciliation (default
	// FlushInterval).
	FlushInterval, Timeout time.Duration
	// MaxKeysPerFlush: see DefaultMaxKeysPerFlush.
	MaxKeysPerFlush int
	// Now tells the time (default time.Now).
	Now func() time.Time
	// OnDiagnostics is called with the complete current diagnostics
	// whenever they change (never concurrently).
	OnDiagnostics func([]diagnostics.Diagnostic)
	Logger        zerolog.Logger
}

// Fleet reconciles the fleet rate limits of one process. Routes join it
// when their policy is compiled and leave it when their state is
// dropped (it holds them weakly).
type Fleet struct {
	opts FleetOptions

	mu     sync.Mutex
	routes map[weak.Pointer[fleetRoute]]struct{}

	local          atomic.Bool // the store failed: every fleet limit is local
	errors, synced atomic.Int64
	flushMu        sync.Mutex // one reconciliation at a time
}

// NewFleet returns a Fleet; Run reconciles until its context ends.
func NewFleet(o FleetOptions) *Fleet {
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = o.FlushInterval
	}
	if o.MaxKeysPerFlush <= 0 {
		o.MaxKeysPerFlush = DefaultMaxKeysPerFlush
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Fleet{opts: o, routes: make(map[weak.Pointer[fleetRoute]]struct{})}
}

// Run reconciles every FlushInterval until ctx ends.
func (f *Fleet) Run(ctx context.Context) {
	t := time.NewTicker(f.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.Flush(ctx)
		}
	}
}

// Local reports whether the fleet limits are enforced locally because
// the store failed.
func (f *Fleet) Local() bool { return f.local.Load() }

// Errors counts failed reconciliations; Synced the keys reconciled.
func (f *Fleet) Errors() int64 { return f.errors.Load() }

// Synced counts the keys reconciled successfully.
func (f *Fleet) Synced() int64 { return f.synced.Load() }

// FlushInterval returns the reconciliation interval.
func (f *Fleet) FlushInterval() time.Duration { return f.opts.FlushInterval }

func (f *Fleet) join(r *fleetRoute) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Weak pointers to one value are equal: joining twice is joining.
	f.routes[weak.Make(r)] = struct{}{}
}

// liveRoutes returns the routes still held by some route state.
func (f *Fleet) liveRoutes() []*fleetRoute {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*fleetRoute, 0, len(f.routes))
	for w := range f.routes {
		if r := w.Value(); r != nil {
			out = append(out, r)
		} else {
			delete(f.routes, w)
		}
	}
	return out
}

// pending is one bucket's spending taken for a reconciliation.
type pending struct {
	route  *fleetRoute
	b      *fleetBucket
	params *fleetParams
	spend  Spend
}

// Flush reconciles the buckets spent from since the last flush, at most
// MaxKeysPerFlush of them. While the limits are local, a flush with
// nothing to reconcile still asks the store (an empty Reconcile), so that
// an idle replica learns that it is back.
func (f *Fleet) Flush(ctx context.Context) {
	f.flushMu.Lock()
	defer f.flushMu.Unlock()
	var batch []pending
	for _, r := range f.liveRoutes() {
		batch = r.take(batch, f.opts.MaxKeysPerFlush)
		if len(batch) >= f.opts.MaxKeysPerFlush {
			break
		}
	}
	if len(batch) == 0 && !f.local.Load() {
		return
	}
	spends := make([]Spend, len(batch))
	for i, p := range batch {
		spends[i] = p.spend
	}
	cctx, cancel := context.WithTimeout(ctx, f.opts.Timeout)
	budgets, err := f.opts.Shared.Reconcile(cctx, spends)
	cancel()
	if err == nil && len(budgets) != len(spends) {
		err = errBudgets
	}
	if err != nil {
		f.errors.Add(1)
		f.setLocal(true, err)
		return
	}
	now := f.opts.Now()
	for i, p := range batch {
		p.b.apply(now, p.params, budgets[i])
		p.route.replicas.Store(int64(max(budgets[i].Replicas, 1)))
	}
	f.synced.Add(int64(len(batch)))
	f.setLocal(false, nil)
}

type budgetsError struct{}

func (budgetsError) Error() string { return "the store answered a different number of budgets" }

var errBudgets error = budgetsError{}

// setLocal records whether the store failed, with W059 while it does.
func (f *Fleet) setLocal(local bool, err error) {
	if f.local.Swap(local) == local {
		return
	}
	if local {
		f.opts.Logger.Warn().Str("event", "rate_limit_store_lost").Err(err).Msg("fleet rate limits are enforced locally until the breaker store answers again")
	} else {
		f.opts.Logger.Info().Str("event", "rate_limit_store_back").Msg("fleet rate limits are shared again")
	}
	if f.opts.OnDiagnostics == nil {
		return
	}
	var ds []diagnostics.Diagnostic
	if local {
		ds = append(ds, diagnostics.New(diagnostics.RateStoreLost, diagnostics.Source{Provider: DiagnosticsSource, ObjectName: "rateLimit"},
			"", "", "local rate limits", "the breaker store did not answer the rate-limit reconciliation: "+err.Error(), "check the --breaker-store address and the store's health"))
	}
	f.opts.OnDiagnostics(ds)
}
