package router

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/e2e/fakeclock"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// TestHistoryRing: each sample is the counters' increase since the one
// before (the first: since the breaker was created), oldest first; the ring keeps the last HistorySamples; a reset
// (counters back to zero) does not wrap around.
func TestHistoryRing(t *testing.T) {
	clock := fakeclock.New(epoch)
	r := New(Options{Clock: clock, HistorySamples: 3, HistoryInterval: time.Second})
	defer r.Close()
	ep := route("app", "/", "app.test")
	cb := config.DefaultCircuitBreaker()
	cb.Params.MinRequests = 1000 // never trips here: every request is admitted
	ep.CircuitBreaker = &cb
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})

	events, cancel := r.Subscribe(64)
	defer cancel()
	guards := r.Snapshot().routes[0].state.guards()
	if len(guards) != 1 {
		t.Fatalf("%d guards, want 1", len(guards))
	}
	b := guards[0].Breaker()
	traffic := func(ok, failed int) {
		for range ok {
			b.Admit().Token.Report(breaker.Outcome{Result: breaker.Success})
		}
		for range failed {
			b.Admit().Token.Report(breaker.Outcome{Result: breaker.Failure})
		}
	}
	sample := func() { clock.Advance(time.Second); r.SampleHistory() }

	traffic(5, 0) // the first sample counts from the breaker's creation
	sample()
	if got := points(t, r); len(got) != 1 || got[0].Requests != 5 || got[0].Failures != 0 {
		t.Fatalf("after the first sample: %v, want 5 requests, 0 failures", got)
	}
	steps := []struct{ ok, failed int }{{3, 1}, {0, 0}, {2, 2}, {1, 4}}
	for _, s := range steps {
		traffic(s.ok, s.failed)
		sample()
	}
	got := points(t, r)
	want := []status.HistoryPoint{
		{Time: epoch.Add(3 * time.Second), Requests: 0, Failures: 0},
		{Time: epoch.Add(4 * time.Second), Requests: 4, Failures: 2},
		{Time: epoch.Add(5 * time.Second), Requests: 5, Failures: 4},
	}
	if len(got) != len(want) {
		t.Fatalf("points %v, want %v", got, want)
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) || got[i].Requests != want[i].Requests || got[i].Failures != want[i].Failures {
			t.Errorf("point %d = %+v, want %+v", i, got[i], want[i])
		}
	}

	if err := r.ControlBreaker("app", status.ActionReset, "test"); err != nil {
		t.Fatal(err)
	}
	traffic(1, 1)
	sample()
	got = points(t, r)
	if last := got[len(got)-1]; last.Requests != 2 || last.Failures != 1 {
		t.Errorf("after a reset: last point %+v, want 2 requests, 1 failure", last)
	}
	var last *status.HistorySample
	for len(events) > 0 {
		if ev := <-events; ev.Type == status.EventHistory {
			hs := ev.Data.(status.HistorySample)
			last = &hs
		}
	}
	if last == nil || len(last.Breakers) != 1 || last.Breakers[0].Requests != 2 || last.Breakers[0].Failures != 1 {
		t.Errorf("last history event %+v, want the last point (2 requests, 1 failure)", last)
	}
	h := r.History()
	if h.IntervalSeconds != 1 || h.Samples != 3 || h.Breakers[0].Name != "app" {
		t.Errorf("History() = %+v", h)
	}
}

func points(t *testing.T, r *Router) []status.HistoryPoint {
	t.Helper()
	h := r.History()
	if len(h.Breakers) != 1 {
		t.Fatalf("history of %d breakers, want 1", len(h.Breakers))
	}
	return h.Breakers[0].Points
}

// TestRunHistoryStopsWithContext: the sampler ticks until its context
// ends, then returns.
func TestRunHistoryStopsWithContext(t *testing.T) {
	r := New(Options{HistoryInterval: time.Millisecond})
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.RunHistory(ctx); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunHistory did not return after its context ended")
	}
}

// BenchmarkSampleHistory is one tick of the sampler over 1,000 breakers:
// what RunHistory costs every interval, off the request path.
func BenchmarkSampleHistory(b *testing.B) {
	r := New(Options{})
	defer r.Close()
	eps := make([]config.Entrypoint, 1000)
	for i := range eps {
		id := fmt.Sprintf("r%d", i)
		eps[i] = route(id, "/", id+".test")
		cb := config.DefaultCircuitBreaker()
		eps[i].CircuitBreaker = &cb
	}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
	events, cancel := r.Subscribe(1)
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		r.SampleHistory()
		select {
		case <-events:
		default:
		}
	}
}
