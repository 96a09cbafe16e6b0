// Package retrybudget keeps retries from amplifying an outage: over a
// sliding window, retries may add at most ratio extra attempts on top of
// the requests seen, with a floor so that a quiet route can still retry
// (the retry budget of Finagle and Envoy's retry_budget).
//
// The window is two fixed halves (current and previous), the previous
// weighted by how much of it the sliding window still covers, the usual
// cheap approximation of a sliding window. Times are the caller's clock
// in nanoseconds, so tests pass their own.
//
// A Budget is a route's state (it outlives snapshots); the request path
// decides when to ask it.
package retrybudget

import (
	"sync"
	"time"
)

// Budget is one route's retry budget; the zero value is an empty budget,
// safe for concurrent use.
type Budget struct {
	mu        sync.Mutex
	start     int64 // start of the current half, clock nanoseconds
	cur, prev struct{ requests, retries int }
}

func (b *Budget) rotate(now int64, window time.Duration) (weight float64) {
	w := int64(window)
	switch {
	case now-b.start >= 2*w:
		b.prev = struct{ requests, retries int }{}
		b.cur = b.prev
		b.start = now
	case now-b.start >= w:
		b.prev = b.cur
		b.cur = struct{ requests, retries int }{}
		b.start += w
	}
	return 1 - float64(now-b.start)/float64(w)
}

// Request records a request of a route that may retry.
func (b *Budget) Request(now int64, window time.Duration) {
	b.mu.Lock()
	b.rotate(now, window)
	b.cur.requests++
	b.mu.Unlock()
}

// Allow reports whether one more retry fits the budget, and records it
// when it does.
func (b *Budget) Allow(now int64, window time.Duration, ratio float64, floor int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	wPrev := b.rotate(now, window)
	requests := float64(b.cur.requests) + wPrev*float64(b.prev.requests)
	retries := float64(b.cur.retries) + wPrev*float64(b.prev.retries)
	if retries+1 > max(float64(floor), ratio*requests) {
		return false
	}
	b.cur.retries++
	return true
}
