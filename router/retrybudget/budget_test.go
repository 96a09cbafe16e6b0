package retrybudget

import (
	"testing"
	"time"
)

const window = 10 * time.Second

// allowed counts the retries a budget grants at now, trying up to limit.
func allowed(b *Budget, now int64, ratio float64, floor, limit int) int {
	n := 0
	for n < limit && b.Allow(now, window, ratio, floor) {
		n++
	}
	return n
}

func TestBudget(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	at := func(d time.Duration) int64 { return start + int64(d) }
	for _, c := range []struct {
		name     string
		requests int           // recorded at the start
		then     time.Duration // when the retries are asked for
		ratio    float64
		floor    int
		want     int
	}{
		{"a quiet route has the floor", 0, 0, 0.2, 3, 3},
		{"ratio of the requests when above the floor", 100, time.Second, 0.2, 3, 20},
		{"the floor when the ratio gives less", 10, time.Second, 0.2, 3, 3},
		{"no ratio, no floor: no retry", 100, time.Second, 0, 0, 0},
		// One half later the previous half is weighted by how much of
		// the sliding window still covers it: 100 × 0.5 × 0.2.
		{"the previous half, halfway through the next", 100, window + window/2, 0.2, 0, 10},
		{"the previous half, as the next begins", 100, window, 0.2, 0, 20},
		{"two windows later nothing is left", 100, 2 * window, 0.2, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b Budget
			for range c.requests {
				b.Request(at(0), window)
			}
			if got := allowed(&b, at(c.then), c.ratio, c.floor, 1000); got != c.want {
				t.Errorf("%d retries allowed, want %d", got, c.want)
			}
		})
	}
}

// Retries granted count against the budget of the half that follows.
func TestRetriesCarryIntoTheNextHalf(t *testing.T) {
	var b Budget
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	for range 100 {
		b.Request(start, window)
	}
	if got := allowed(&b, start, 0.2, 0, 1000); got != 20 {
		t.Fatalf("%d retries in the first half, want 20", got)
	}
	// As the next half begins, the previous half counts in full: its 100
	// requests and 20 retries leave no room.
	if got := allowed(&b, start+int64(window), 0.2, 0, 1000); got != 0 {
		t.Fatalf("%d retries at the start of the next half, want 0", got)
	}
}
