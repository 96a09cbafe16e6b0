// Package fakeclock is a clock for tests that moves only when the test
// moves it: code that reads the time through an injected Now (breaker
// windows, cooldowns, rate limits, session idle times) is driven past a
// deadline at once, without sleeping. It has no timers: code that waits
// on time is tested with testing/synctest instead.
package fakeclock

import (
	"sync"
	"time"
)

// Clock tells a time that changes only by Advance; safe for concurrent
// use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock standing at start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock d forward (backward for a negative d).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
