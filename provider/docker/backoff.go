package docker

import "time"

// Default reconnect backoff bounds.
const (
	DefaultRetryMin = 250 * time.Millisecond
	DefaultRetryMax = 30 * time.Second
)

// backoff yields capped exponential delays: min, 2·min, 4·min, … up to max.
// reset starts over after a successful sync.
type backoff struct {
	min, max time.Duration
	next     time.Duration
}

func newBackoff(min, max time.Duration) *backoff {
	if min <= 0 {
		min = DefaultRetryMin
	}
	if max < min {
		max = min
	}
	return &backoff{min: min, max: max, next: min}
}

// delay returns the wait before the next attempt and doubles the one after.
func (b *backoff) delay() time.Duration {
	d := b.next
	if b.next < b.max {
		b.next = min(b.next*2, b.max)
	}
	return d
}

func (b *backoff) reset() { b.next = b.min }
