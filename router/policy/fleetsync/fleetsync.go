// Package fleetsync reconciles the local state of a fleet-shared limit
// (rateLimit.scope=fleet, inFlight.scope=fleet) with the breaker store,
// in the background: no request ever waits on the store.
//
// What is reconciled: routes join a Reconciler when their policy is
// compiled and leave it when the router drops their state (it holds
// them weakly, so a dropped route leaves by itself). Every flush takes
// from the live routes, in turn, the keys that have something to tell
// the store (Limit.Take), at most MaxKeysPerFlush of them: keys beyond
// the bound wait for a later flush. The flush sends one report per key
// in one call (Limit.Send) and, when the store answered one result per
// key, hands the answers back to the keys (Limit.Apply). What a key
// reports and what its answer does is the limit's own business.
//
// How often: Run flushes every FlushInterval (DefaultFlushInterval);
// flushes never overlap, and a flush that outlasts the interval is
// followed by at most one more at once (the ticks it missed are
// dropped, not queued). A healthy replica with nothing to report does
// not call the store.
//
// Failure and recovery: a store call that fails, outlasts Timeout
// (default FlushInterval) or answers a different number of results
// makes the limits local: Local reports true, Errors counts the failed
// flush, and on the change (not on every failure) a warning is logged
// (event <Event>_lost) and OnDiagnostics gets W059. Each policy then
// enforces its limit on this replica alone: the fleet fails to local
// limits, never open. While local, a flush with nothing to report still
// calls the store with no keys (a health check), so that an idle
// replica learns that the store is back. The first answered flush makes
// the limits shared again: logged at info (event <Event>_back) and
// OnDiagnostics with no diagnostics.
//
// Waits: one store call waits at most Timeout; a Flush called while
// another runs waits for that one, so at most one Timeout plus the local
// work of a batch; Run waits for its context.
package fleetsync

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
)

// Defaults of Options.
const (
	DefaultFlushInterval = 200 * time.Millisecond
	// DefaultMaxKeysPerFlush bounds the keys one reconciliation sends.
	DefaultMaxKeysPerFlush = 4096
)

// Options configure a Reconciler; the zero value takes the defaults.
type Options struct {
	// FlushInterval is how often Run reconciles (default
	// DefaultFlushInterval); Timeout bounds one store call (default
	// FlushInterval).
	FlushInterval, Timeout time.Duration
	// MaxKeysPerFlush bounds the keys one reconciliation sends (default
	// DefaultMaxKeysPerFlush).
	MaxKeysPerFlush int
	// OnDiagnostics is called with the complete current diagnostics
	// whenever they change (never concurrently).
	OnDiagnostics func([]diagnostics.Diagnostic)
	Logger        zerolog.Logger
}

// Names are what one kind of fleet limit is called in its log lines and
// its diagnostic.
type Names struct {
	// Limits names the limits, plural ("rate limits"): the log lines
	// speak of the "fleet <Limits>", W059's fallback is "local <Limits>".
	Limits string
	// Reconciliation names what failed in W059's message
	// ("rate-limit reconciliation").
	Reconciliation string
	// Event prefixes the log events <Event>_lost and <Event>_back.
	Event string
	// Source is W059's source.
	Source diagnostics.Source
	// Answers names the store's results ("budgets") in the error of an
	// answer with a different number of them.
	Answers string
}

// Limit is what one kind of fleet limit brings to its Reconciler: R is
// its route state, P a key taken for a flush, Q what the store is told
// of a key and A what it answers.
type Limit[R, P, Q, A any] struct {
	Names
	// Take appends to batch at most limit-len(batch) of r's keys that
	// have something to report.
	Take func(r *R, batch []P, limit int) []P
	// Report is what the store is told of p.
	Report func(p P) Q
	// Send is the store: it answers one result per report, in order.
	// Called with no reports, it is a health check.
	Send func(ctx context.Context, reports []Q) ([]A, error)
	// Apply hands the answers to the keys, answers[i] to batch[i]. It is
	// called only when the store answered every report.
	Apply func(batch []P, answers []A)
}

// Reconciler reconciles one kind of fleet limit of one process with the
// store. Its methods are safe for concurrent use.
type Reconciler[R, P, Q, A any] struct {
	opts  Options
	limit Limit[R, P, Q, A]

	mu     sync.Mutex
	routes map[weak.Pointer[R]]struct{}

	local          atomic.Bool // the store failed: every fleet limit is local
	errors, synced atomic.Int64
	flushMu        sync.Mutex // one reconciliation at a time
}

// New returns a Reconciler of limit; Run reconciles until its context
// ends.
func New[R, P, Q, A any](o Options, limit Limit[R, P, Q, A]) *Reconciler[R, P, Q, A] {
	if o.FlushInterval <= 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.Timeout <= 0 {
		o.Timeout = o.FlushInterval
	}
	if o.MaxKeysPerFlush <= 0 {
		o.MaxKeysPerFlush = DefaultMaxKeysPerFlush
	}
	return &Reconciler[R, P, Q, A]{opts: o, limit: limit, routes: make(map[weak.Pointer[R]]struct{})}
}

// Run reconciles every FlushInterval until ctx ends.
func (c *Reconciler[R, P, Q, A]) Run(ctx context.Context) {
	t := time.NewTicker(c.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.Flush(ctx)
		}
	}
}

// Local reports whether the fleet limits are enforced locally because
// the store failed.
func (c *Reconciler[R, P, Q, A]) Local() bool { return c.local.Load() }

// Errors counts failed reconciliations.
func (c *Reconciler[R, P, Q, A]) Errors() int64 { return c.errors.Load() }

// Synced counts the keys reconciled successfully.
func (c *Reconciler[R, P, Q, A]) Synced() int64 { return c.synced.Load() }

// FlushInterval returns the reconciliation interval.
func (c *Reconciler[R, P, Q, A]) FlushInterval() time.Duration { return c.opts.FlushInterval }

// Join adds r to the routes the flushes take keys from, until the last
// reference to r is dropped. Joining twice is joining once (weak
// pointers to one value are equal).
func (c *Reconciler[R, P, Q, A]) Join(r *R) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.routes[weak.Make(r)] = struct{}{}
}

// liveRoutes returns the routes still held by some route state,
// forgetting the others.
func (c *Reconciler[R, P, Q, A]) liveRoutes() []*R {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*R, 0, len(c.routes))
	for w := range c.routes {
		if r := w.Value(); r != nil {
			out = append(out, r)
		} else {
			delete(c.routes, w)
		}
	}
	return out
}

// Flush reconciles once: the keys the routes have to report, at most
// MaxKeysPerFlush of them, in one store call bounded by Timeout. While
// the limits are local, a flush with nothing to report still asks the
// store, so that an idle replica learns that it is back.
func (c *Reconciler[R, P, Q, A]) Flush(ctx context.Context) {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	var batch []P
	for _, r := range c.liveRoutes() {
		if len(batch) >= c.opts.MaxKeysPerFlush {
			break
		}
		batch = c.limit.Take(r, batch, c.opts.MaxKeysPerFlush)
	}
	if len(batch) == 0 && !c.local.Load() {
		return
	}
	reports := make([]Q, len(batch))
	for i, p := range batch {
		reports[i] = c.limit.Report(p)
	}
	cctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	answers, err := c.limit.Send(cctx, reports)
	cancel()
	if err == nil && len(answers) != len(reports) {
		err = answersError(c.limit.Answers)
	}
	if err != nil {
		c.errors.Add(1)
		c.setLocal(true, err)
		return
	}
	c.limit.Apply(batch, answers)
	c.synced.Add(int64(len(batch)))
	c.setLocal(false, nil)
}

// answersError is an answer with a different number of results than
// reports; it names the results.
type answersError string

func (e answersError) Error() string { return "the store answered a different number of " + string(e) }

// setLocal records whether the store failed, with W059 while it does.
func (c *Reconciler[R, P, Q, A]) setLocal(local bool, err error) {
	if c.local.Swap(local) == local {
		return
	}
	n := c.limit.Names
	if local {
		c.opts.Logger.Warn().Str("event", n.Event+"_lost").Err(err).Msg("fleet " + n.Limits + " are enforced locally until the breaker store answers again")
	} else {
		c.opts.Logger.Info().Str("event", n.Event+"_back").Msg("fleet " + n.Limits + " are shared again")
	}
	if c.opts.OnDiagnostics == nil {
		return
	}
	var ds []diagnostics.Diagnostic
	if local {
		ds = append(ds, diagnostics.New(diagnostics.RateStoreLost, n.Source,
			"", "", "local "+n.Limits, "the breaker store did not answer the "+n.Reconciliation+": "+err.Error(), "check the --breaker-store address and the store's health"))
	}
	c.opts.OnDiagnostics(ds)
}
