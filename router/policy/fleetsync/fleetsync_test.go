package fleetsync

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy/internal/fleetsynctest"
)

// route is a fake route state: the keys waiting to be reported.
type route struct {
	mu      sync.Mutex
	waiting []string
}

func (r *route) wait(keys ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.waiting = append(r.waiting, keys...)
}

func (r *route) take(batch []key, limit int) []key {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := min(len(r.waiting), limit-len(batch))
	for _, k := range r.waiting[:n] {
		batch = append(batch, key{r, k})
	}
	r.waiting = r.waiting[n:]
	return batch
}

// key is one key taken for a flush.
type key struct {
	route *route
	name  string
}

// store is a fake store: it answers one result per report unless it
// fails (Outage), answers one result too many (extra) or waits for the
// deadline (hang).
type store struct {
	fleetsynctest.Outage
	mu                 sync.Mutex
	extra, hang        bool
	sent               [][]string
	applied            int
	underway, maxUnder int // calls under way at once
	delay              time.Duration
}

func (s *store) set(extra, hang bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra, s.hang = extra, hang
}

func (s *store) send(ctx context.Context, reports []string) ([]int, error) {
	s.mu.Lock()
	s.underway++
	s.maxUnder = max(s.maxUnder, s.underway)
	s.sent = append(s.sent, reports)
	extra, hang, delay := s.extra, s.hang, s.delay
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.underway--
		s.mu.Unlock()
	}()
	runtime.Gosched() // lets an overlapping call, if any, get under way
	if err := s.Call(); err != nil {
		return nil, err
	}
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	time.Sleep(delay)
	out := make([]int, len(reports))
	if extra {
		out = append(out, 0)
	}
	return out, nil
}

func (s *store) apply(batch []key, answers []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied += len(batch)
}

var testNames = Names{Limits: "test limits", Reconciliation: "test reconciliation", Event: "test_store",
	Source: diagnostics.Source{Provider: "test-store", ObjectName: "test"}, Answers: "answers"}

// harness is a Reconciler of the fake limit with one route joined.
type harness struct {
	c     *Reconciler[route, key, string, int]
	store *store
	route *route
	logs  *fleetsynctest.Log
	diags *fleetsynctest.Diagnostics
}

func newHarness(o Options) *harness {
	h := &harness{store: &store{}, route: &route{}, logs: &fleetsynctest.Log{}, diags: &fleetsynctest.Diagnostics{}}
	o.Logger = zerolog.New(h.logs)
	o.OnDiagnostics = h.diags.Report
	h.c = New(o, Limit[route, key, string, int]{
		Names: testNames, Take: (*route).take,
		Report: func(k key) string { return k.name },
		Send:   h.store.send, Apply: h.store.apply,
	})
	h.c.Join(h.route)
	return h
}

// keys returns n key names.
func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "k" + strconv.Itoa(i)
	}
	return out
}

// The healthy/local state machine over sequences of flushes: what is
// counted, what the store is asked, which diagnostics and log events the
// changes (and only the changes) bring.
func TestReconcilerStates(t *testing.T) {
	type step struct {
		keys    int
		outcome string // "ok", "fail", "extra" (a result too many), "late" (past Timeout)
		local   bool   // want after the step
	}
	for _, c := range []struct {
		name                  string
		steps                 []step
		errors, synced, calls int64
		applied               int
		codes, events         string
	}{
		{name: "healthy with keys", steps: []step{{2, "ok", false}, {1, "ok", false}},
			synced: 3, calls: 2, applied: 3},
		{name: "healthy and idle asks nothing", steps: []step{{0, "ok", false}, {0, "fail", false}}},
		{name: "failures make the limits local once", steps: []step{{1, "fail", true}, {1, "fail", true}, {0, "fail", true}},
			errors: 3, calls: 3, codes: "W059", events: "test_store_lost"},
		{name: "local and idle asks and recovers", steps: []step{{1, "fail", true}, {0, "ok", false}, {0, "ok", false}},
			errors: 1, calls: 2, codes: "W059 -", events: "test_store_lost test_store_back"},
		{name: "an answer of another length fails", steps: []step{{2, "extra", true}, {1, "ok", false}},
			errors: 1, synced: 1, calls: 2, applied: 1, codes: "W059 -", events: "test_store_lost test_store_back"},
		{name: "a late answer fails", steps: []step{{1, "late", true}},
			errors: 1, calls: 1, codes: "W059", events: "test_store_lost"},
		{name: "lost, back, lost again", steps: []step{{1, "fail", true}, {1, "ok", false}, {1, "late", true}, {1, "ok", false}},
			errors: 2, synced: 2, calls: 4, applied: 2, codes: "W059 - W059 -", events: "test_store_lost test_store_back test_store_lost test_store_back"},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(Options{Timeout: 50 * time.Millisecond})
				for i, s := range c.steps {
					h.route.wait(keys(s.keys)...)
					h.store.Set(nil)
					h.store.set(s.outcome == "extra", s.outcome == "late")
					if s.outcome == "fail" {
						h.store.Set(errors.New("connection refused"))
					}
					h.c.Flush(t.Context())
					if h.c.Local() != s.local {
						t.Fatalf("step %d (%d keys, %s): local=%v, want %v", i, s.keys, s.outcome, h.c.Local(), s.local)
					}
				}
				if h.c.Errors() != c.errors || h.c.Synced() != c.synced || int64(h.store.Calls()) != c.calls || h.store.applied != c.applied {
					t.Fatalf("errors %d synced %d calls %d applied %d, want %d %d %d %d",
						h.c.Errors(), h.c.Synced(), h.store.Calls(), h.store.applied, c.errors, c.synced, c.calls, c.applied)
				}
				if got := h.diags.Codes(); got != c.codes {
					t.Fatalf("diagnostics %q, want %q", got, c.codes)
				}
				if got := h.logs.Events(t); got != c.events {
					t.Fatalf("log events %q, want %q", got, c.events)
				}
			})
		})
	}
}

// The log lines and W059 are made of the limit's names and say what
// failed.
func TestReconcilerLogAndDiagnosticText(t *testing.T) {
	h := newHarness(Options{})
	h.route.wait("k")
	h.store.Set(errors.New("connection refused"))
	h.c.Flush(t.Context())
	h.store.Set(nil)
	h.c.Flush(t.Context())
	lines := h.logs.Lines(t)
	if len(lines) != 2 {
		t.Fatalf("log lines %v, want lost and back", lines)
	}
	lost, back := lines[0], lines[1]
	if lost["level"] != "warn" || lost["event"] != "test_store_lost" || lost["error"] != "connection refused" ||
		lost["message"] != "fleet test limits are enforced locally until the breaker store answers again" {
		t.Fatalf("lost: %v", lost)
	}
	if back["level"] != "info" || back["event"] != "test_store_back" || back["message"] != "fleet test limits are shared again" {
		t.Fatalf("back: %v", back)
	}
	d := h.diags.Changes()[0][0]
	want := diagnostics.New(diagnostics.RateStoreLost, testNames.Source, "", "", "local test limits",
		"the breaker store did not answer the test reconciliation: connection refused", "check the --breaker-store address and the store's health")
	if d != want {
		t.Fatalf("W059 %+v, want %+v", d, want)
	}

	h = newHarness(Options{})
	h.route.wait("a", "b")
	h.store.set(true, false)
	h.c.Flush(t.Context())
	if m := h.diags.Changes()[0][0].Message; !strings.HasSuffix(m, ": the store answered a different number of answers") {
		t.Fatalf("W059 of a short answer: %q", m)
	}
}

// Run flushes every FlushInterval and returns when its context ends.
func TestReconcilerRunFlushesEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(Options{FlushInterval: 100 * time.Millisecond})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.c.Run(ctx)
		}()
		for i := range 3 {
			h.route.wait("k")
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if got := h.store.Calls(); got != i+1 {
				t.Fatalf("after %d intervals: %d store calls", i+1, got)
			}
		}
		time.Sleep(250 * time.Millisecond) // nothing to report: no calls
		synctest.Wait()
		if got := h.store.Calls(); got != 3 {
			t.Fatalf("idle intervals called the store: %d calls", got)
		}
		cancel()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Run did not return when its context ended")
		}
	})
}

// The zero Options: a flush every 200ms, a store call cut at the same
// 200ms, at most 4,096 keys a flush.
func TestReconcilerDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(Options{})
		if got := h.c.FlushInterval(); got != DefaultFlushInterval || DefaultFlushInterval != 200*time.Millisecond {
			t.Fatalf("FlushInterval %v, want 200ms", got)
		}
		h.route.wait(keys(DefaultMaxKeysPerFlush + 10)...)
		h.c.Flush(t.Context())
		if got := h.c.Synced(); got != DefaultMaxKeysPerFlush {
			t.Fatalf("one flush synced %d keys, want %d", got, DefaultMaxKeysPerFlush)
		}
		h.store.set(false, true)
		start := time.Now()
		h.c.Flush(t.Context())
		if took := time.Since(start); took != DefaultFlushInterval || !h.c.Local() {
			t.Fatalf("a hanging store: the flush took %v (local=%v), want cut at %v", took, h.c.Local(), DefaultFlushInterval)
		}
	})
}

// Timeout bounds one store call.
func TestReconcilerTimeoutBoundsStoreCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(Options{FlushInterval: time.Second, Timeout: 50 * time.Millisecond})
		h.route.wait("k")
		h.store.set(false, true)
		start := time.Now()
		h.c.Flush(t.Context())
		if took := time.Since(start); took != 50*time.Millisecond || !h.c.Local() {
			t.Fatalf("a hanging store held the flush %v (local=%v), want the 50ms Timeout and local", took, h.c.Local())
		}
	})
}

// Flushes called at once never overlap. (Outside synctest: a goroutine
// waiting on a mutex does not let a bubble's clock move.)
func TestReconcilerFlushesNeverOverlap(t *testing.T) {
	h := newHarness(Options{})
	h.store.Set(errors.New("down"))
	h.route.wait("k")
	h.c.Flush(t.Context()) // local now: every flush asks the store, keys or none
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				h.c.Flush(t.Context())
			}
		})
	}
	wg.Wait()
	if h.store.Calls() != 101 || h.store.maxUnder != 1 {
		t.Fatalf("%d store calls, %d under way at once, want 101 and 1", h.store.Calls(), h.store.maxUnder)
	}
}

// MaxKeysPerFlush bounds a flush over every route; the keys beyond it
// go with later flushes.
func TestReconcilerKeysPerFlushAcrossRoutes(t *testing.T) {
	h := newHarness(Options{MaxKeysPerFlush: 4})
	other := &route{}
	h.c.Join(other)
	h.route.wait(keys(3)...)
	other.wait(keys(3)...)
	for i, want := range []int64{4, 6, 6} {
		h.c.Flush(t.Context())
		if got := h.c.Synced(); got != want {
			t.Fatalf("after flush %d: %d synced, want %d", i+1, got, want)
		}
	}
	for _, s := range h.store.sent {
		if len(s) > 4 {
			t.Fatalf("a flush sent %d keys, want at most 4", len(s))
		}
	}
	runtime.KeepAlive(other)
}

// Joining twice is joining once; a route no state holds any more leaves.
func TestReconcilerRoutesHeldWeakly(t *testing.T) {
	h := newHarness(Options{})
	h.c.Join(h.route)
	if n := len(h.c.liveRoutes()); n != 1 {
		t.Fatalf("one route joined twice: %d routes", n)
	}
	h.c.Join(&route{waiting: []string{"gone"}})
	deadline := time.Now().Add(10 * time.Second)
	for len(h.c.liveRoutes()) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("a dropped route is still reconciled")
		}
		runtime.GC()
	}
	runtime.KeepAlive(h.route)
}
