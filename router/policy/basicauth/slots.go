package basicauth

import (
	"context"
	"errors"
	"runtime"
	"time"
)

// DefaultSlotWait is how long a password check waits for a free slot
// before the request is refused (503, auth-busy).
const DefaultSlotWait = time.Second

// errBusy: no slot came free within the wait.
var errBusy = errors.New("basicauth: every password-check slot is busy")

// Slots bound the password checks (bcrypt, and the dummy checks that keep
// failures at one cost) under way at once in the whole process, over
// every basic-auth route. bcrypt is deliberately slow: without a bound, a
// flood of wrong passwords on one route runs one bcrypt per connection at
// once and takes every core from the other routes. With it, the flood
// waits for a slot, and past the wait it is refused, costing the other
// routes nothing. The router makes one Slots and gives it to every route.
type Slots struct {
	ch   chan struct{}
	wait time.Duration
}

// DefaultSlots is half the cores Go may use, at least one: the other half
// always serves routes that do not check passwords.
func DefaultSlots() int { return max(1, runtime.GOMAXPROCS(0)/2) }

// NewSlots returns n slots (DefaultSlots when n <= 0) whose waiters give
// up after wait (DefaultSlotWait when wait <= 0).
func NewSlots(n int, wait time.Duration) *Slots {
	if n <= 0 {
		n = DefaultSlots()
	}
	if wait <= 0 {
		wait = DefaultSlotWait
	}
	return &Slots{ch: make(chan struct{}, n), wait: wait}
}

// Cap returns the number of slots.
func (s *Slots) Cap() int { return cap(s.ch) }

// acquire takes a slot, waiting at most s.wait (errBusy) and no longer
// than ctx lives (ctx.Err()). A nil error must be paired with release.
func (s *Slots) acquire(ctx context.Context) error {
	select {
	case s.ch <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case s.ch <- struct{}{}:
		return nil
	case <-t.C:
		return errBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Slots) release() { <-s.ch }
