package docker

import "time"

// Default reconnect backoff bounds.
const (
	DefaultRetryMin = 250 * time.Millisecond
	DefaultRetryMax = 30 * time.Second
)

// backoff yields capped exponential delays with jitter: the base delay is
// min, 2·min, 4·min, … up to max, and each delay is drawn from
// [base/2, base]. Jitter spreads the retries of many Levees watching one
// engine; keeping at least half the base keeps the delays growing (each
// lower bound is the previous base). reset starts over at min.
type backoff struct {
	min, max time.Duration
	next     time.Duration
	// jitter returns a uniform number in [0, 1): 0 gives the base delay,
	// values near 1 give half of it.
	jitter func() float64
}

func newBackoff(min, max time.Duration, jitter func() float64) *backoff {
	if min <= 0 {
		min = DefaultRetryMin
	}
	if max < min {
		max = min
	}
	if jitter == nil {
		jitter = func() float64 { return 0 }
	}
	return &backoff{min: min, max: max, next: min, jitter: jitter}
}

// delay returns the wait before the next attempt and doubles the base of
// the one after, up to max.
func (b *backoff) delay() time.Duration {
	base := b.next
	// Compared with max/2 rather than doubled first, so that a huge max
	// cannot overflow.
	if b.next > b.max/2 {
		b.next = b.max
	} else {
		b.next *= 2
	}
	j := min(max(b.jitter(), 0), 1)
	return base - time.Duration(j*float64(base/2))
}

func (b *backoff) reset() { b.next = b.min }
