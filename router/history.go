package router

import (
	"context"
	"sync"
	"time"

	"github.com/levee-proxy/levee/router/status"
)

// Defaults of the breaker history (Options.HistoryInterval and
// HistorySamples): 60 samples 5 s apart, the last five minutes.
const (
	DefaultHistoryInterval = 5 * time.Second
	DefaultHistorySamples  = 60
)

// history is one breaker's ring of samples. The sampler reads the
// breaker's own cumulative counters (the ones its Stats already reports)
// and stores the difference since the previous sample, so the request path
// does nothing more for it.
type history struct {
	mu     sync.Mutex
	points []status.HistoryPoint // ring storage, len ≤ the samples kept
	next   int                   // where the next point goes once full
	// The counters at the previous sample; zero before the first, as the
	// breaker's counters start at zero with it.
	lastRequests, lastFailures uint64
}

// add records the counters sampled at now: the point is the increase
// since the previous sample. A counter that went backwards (a reset
// breaker) counts from zero.
func (h *history) add(now time.Time, requests, failures uint64, max int) status.HistoryPoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := status.HistoryPoint{Time: now, Requests: delta(requests, h.lastRequests), Failures: delta(failures, h.lastFailures)}
	h.lastRequests, h.lastFailures = requests, failures
	if len(h.points) < max {
		h.points = append(h.points, p)
	} else {
		h.points[h.next] = p
		h.next = (h.next + 1) % len(h.points)
	}
	return p
}

func delta(now, before uint64) uint64 {
	if now < before {
		return now
	}
	return now - before
}

// snapshot returns the points oldest first.
func (h *history) snapshot() []status.HistoryPoint {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]status.HistoryPoint, 0, len(h.points))
	out = append(out, h.points[h.next:]...)
	return append(out, h.points[:h.next]...)
}

// RunHistory samples every breaker's counters each Options.HistoryInterval
// until ctx ends. Nothing is recorded while it does not run.
func (r *Router) RunHistory(ctx context.Context) {
	t := time.NewTicker(r.opts.HistoryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.SampleHistory()
		}
	}
}

// SampleHistory takes one sample of every current breaker at the clock's
// time and publishes the new points as one history event (none without
// breakers). RunHistory calls it on its ticker; tests call it
// directly.
func (r *Router) SampleHistory() {
	now := r.clock.Now()
	var got []status.BreakerSample
	for _, rt := range r.snap.Load().routes {
		for _, g := range rt.state.guards() {
			st := g.b.Stats()
			p := g.hist.add(now, st.Admitted+st.Rejected, st.Failures, r.opts.HistorySamples)
			got = append(got, status.BreakerSample{Route: g.route, Backend: g.backend, Name: g.name(),
				Requests: p.Requests, Failures: p.Failures})
		}
	}
	if len(got) > 0 {
		r.bus.Publish(status.Event{Type: status.EventHistory, Time: now, Data: status.HistorySample{Time: now, Breakers: got}})
	}
}

// History returns the sampled history of every breaker of every current
// route, ordered as Breakers.
func (r *Router) History() status.History {
	out := status.History{
		IntervalSeconds: r.opts.HistoryInterval.Seconds(),
		Samples:         r.opts.HistorySamples,
		Breakers:        []status.BreakerHistory{},
	}
	for _, rt := range r.snap.Load().routes {
		for _, g := range rt.state.guards() {
			out.Breakers = append(out.Breakers, status.BreakerHistory{
				Route: g.route, Backend: g.backend, Name: g.name(), Points: g.hist.snapshot(),
			})
		}
	}
	return out
}
