package breaker

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Behaviour 12: events, their order, and delivery outside the lock.
func TestEvents(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1, Cooldown: 2 * time.Second})
	start := h.clock.Now()
	h.trip()
	h.toHalfOpen()
	h.fail(1)
	h.toHalfOpen()
	h.succeed(1)
	h.b.ForceOpen()
	h.b.ForceClose()
	want := []string{"opened:error_ratio", "half-open", "opened:half_open_probe_failed", "half-open", "closed", "opened:manual", "closed:manual"}
	if got := h.rec.events(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	ts := h.rec.all()
	prev := Closed
	for i, tr := range ts {
		if tr.Name != "test" || tr.From != prev || tr.Generation != uint64(i)+2 || tr.At.Before(start) {
			t.Fatalf("transition %d malformed: %+v", i, tr)
		}
		prev = tr.To
	}
	if ts[0].RetryAfter != 2*time.Second || ts[2].RetryAfter != 2*time.Second {
		t.Fatalf("open durations %v %v", ts[0].RetryAfter, ts[2].RetryAfter)
	}
	if !ts[1].At.Equal(start.Add(2 * time.Second)) {
		t.Fatalf("half-open at %v, want cooldown after %v", ts[1].At, start)
	}
}

func TestCallbacksRunOutsideTheLock(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1})
	var (
		seen    []string
		depth   atomic.Int32
		overlap atomic.Bool
	)
	h.b.OnTransition(func(tr Transition) {
		if depth.Add(1) != 1 {
			overlap.Store(true)
		}
		defer depth.Add(-1)
		// Would deadlock if called under the breaker's lock.
		seen = append(seen, tr.Event()+"/"+h.b.State().String()+"/"+h.b.Stats().State.String())
		if tr.To == Open && tr.Rule == RuleErrorRatio {
			// A transition caused from a callback is queued, delivered after
			// this callback returns, never nested.
			h.b.ForceClose()
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.fail(1)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("callback calling State/Stats deadlocked")
	}
	// Delivered synchronously: by the time Report returned, both events were delivered.
	want := []string{"opened/open/open", "closed/closed/closed"}
	if !slices.Equal(seen, want) {
		t.Fatalf("seen %v, want %v", seen, want)
	}
	if overlap.Load() {
		t.Fatal("callbacks ran nested")
	}
}

type observerFunc func(name string, from, to State)

func (f observerFunc) RecordTransition(name string, from, to State) { f(name, from, to) }

func TestObserversInRegistrationOrder(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1})
	var order []string
	h.b.OnStateChange(func(name string, from, to State) {
		order = append(order, "cb1:"+name+":"+from.String()+">"+to.String())
	})
	h.b.SetObserver(observerFunc(func(name string, from, to State) { order = append(order, "obs:"+from.String()+">"+to.String()) }))
	h.b.OnTransition(func(tr Transition) { order = append(order, "cb2") })
	h.trip()
	want := []string{"cb1:test:closed>open", "cb2", "obs:closed>open"}
	if !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	h.b.SetObserver(nil)
	h.b.ForceClose()
	if len(order) != 5 {
		t.Fatalf("observer not removed: %v", order)
	}
}

func TestPanickingCallbackDoesNotWedgeDelivery(t *testing.T) {
	h := newHarness(t, Params{MinRequests: 1})
	boom := true
	h.b.OnTransition(func(Transition) {
		if boom {
			boom = false
			panic("boom")
		}
	})
	func() {
		defer func() { _ = recover() }()
		h.fail(1)
	}()
	h.b.ForceClose()
	if got := h.rec.events(); !slices.Equal(got, []string{"opened:error_ratio", "closed:manual"}) {
		t.Fatalf("events after a panicking callback: %v", got)
	}
}

// Behaviour 15: many goroutines under -race; invariants hold.
func TestStress(t *testing.T) {
	const (
		workers = 8
		ops     = 4000
		probes  = 3
	)
	c := newFakeClock()
	b := NewWithParams("stress", Params{
		MinRequests: 10, Cooldown: time.Second, MaxCooldown: 4 * time.Second, HalfOpenProbes: probes,
		SuccessesToClose: 2, ProbeTimeout: time.Hour, ConsecutiveFailures: 5, RecoveryDuration: 2 * time.Second,
		Window: 0, CooldownJitter: 0.5,
	}, Options{Clock: c, Rand: func() float64 { return 0.25 }})

	var (
		inCallback atomic.Int32
		evMu       sync.Mutex
		events     []Transition
		bad        atomic.Value
	)
	b.OnTransition(func(tr Transition) {
		if inCallback.Add(1) != 1 {
			bad.Store("callbacks ran concurrently")
		}
		evMu.Lock()
		events = append(events, tr)
		evMu.Unlock()
		inCallback.Add(-1)
	})

	var probeMu sync.Mutex
	inflight := map[uint64]int{} // generation -> probes admitted and not yet reported
	var calls, admitted, rejected, duplicates atomic.Uint64

	stop := make(chan struct{})
	var clockWG sync.WaitGroup
	clockWG.Add(1)
	go func() {
		defer clockWG.Done()
		for {
			select {
			case <-stop:
				return
			default:
				c.Advance(50 * time.Millisecond)
				if st := b.Stats(); st.ProbesInFlight > probes {
					bad.Store("more probes in flight than slots")
				}
			}
		}
	}()

	// Rounds of load until the state machine has gone through a few
	// transitions: on a loaded machine the clock goroutine may advance
	// little during one round.
	for round := 0; round < 50; round++ {
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range ops {
					calls.Add(1)
					d := b.Admit()
					if !d.Admitted {
						rejected.Add(1)
						continue
					}
					admitted.Add(1)
					tok := d.Token
					if tok.Probe() {
						probeMu.Lock()
						inflight[tok.gen]++
						if inflight[tok.gen] > probes {
							bad.Store("more concurrent probes than halfOpenProbes")
						}
						probeMu.Unlock()
					}
					r := Success
					switch (i*7 + w) % 10 {
					case 0, 1, 2, 3:
						r = Failure
					case 4:
						r = Neutral
					}
					if tok.Probe() {
						probeMu.Lock()
						inflight[tok.gen]-- // the slot is free once reported
						probeMu.Unlock()
					}
					tok.Report(Outcome{Result: r})
					if i%13 == 0 {
						duplicates.Add(1)
						tok.Report(Outcome{Result: Failure}) // double report
					}
				}
			}()
		}
		wg.Wait()
		evMu.Lock()
		enough := len(events) >= 3
		evMu.Unlock()
		if enough {
			break
		}
	}
	close(stop)
	clockWG.Wait()

	if msg := bad.Load(); msg != nil {
		t.Fatal(msg)
	}
	st := b.Stats()
	if st.Admitted != admitted.Load() || st.Rejected != rejected.Load() || st.Admitted+st.Rejected != calls.Load() {
		t.Fatalf("admissions don't add up: stats %d+%d, observed %d+%d of %d calls", st.Admitted, st.Rejected, admitted.Load(), rejected.Load(), calls.Load())
	}
	// A duplicate is counted only when 512 other reports came between it
	// and the first (see Token), so the counted outcomes never exceed the
	// admissions plus the duplicates sent.
	if counted := st.Successes + st.Failures + st.Neutral; counted > st.Admitted+duplicates.Load() {
		t.Fatalf("%d outcomes counted for %d admissions and %d duplicates", counted, st.Admitted, duplicates.Load())
	}
	evMu.Lock()
	if len(events) < 3 {
		t.Fatalf("only %d transitions: the stress did not exercise the state machine", len(events))
	}
	prev, gen := Closed, uint64(1)
	for i, tr := range events {
		if tr.From != prev || tr.Generation != gen+1 || tr.From == tr.To {
			t.Fatalf("event %d out of order: %+v after state %v gen %d", i, tr, prev, gen)
		}
		prev, gen = tr.To, tr.Generation
	}
	evMu.Unlock()

	// Closed, no transitions: every report counts, none is lost.
	b.Reset()
	b.SetParams(Params{MinRequests: 100})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range ops {
				d := b.Admit()
				d.Token.Report(Outcome{Result: Success})
			}
		}()
	}
	wg.Wait()
	st = b.Stats()
	if st.State != Closed || st.Admitted != workers*ops || st.Successes != workers*ops || st.WindowTotal != 100 {
		t.Fatalf("closed-state counts: %+v", st)
	}
}
