package traffic

import (
	"sync/atomic"
	"time"
)

// Shape of every ring: Buckets buckets of BucketWidth, the last Window.
const (
	BucketWidth = 10 * time.Second
	Buckets     = 30
	Window      = Buckets * BucketWidth
	// RateWindow is the span the request rate is taken over: the last
	// minute, so that the rate follows the traffic while the ring still
	// shows five minutes.
	RateWindow = time.Minute
)

// LatencyBounds are the upper bounds of the latency histogram's buckets;
// a request slower than the last bound falls in a final overflow bucket.
var LatencyBounds = [...]time.Duration{
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// latencySlots is the histogram's size: one per bound and the overflow.
const latencySlots = len(LatencyBounds) + 1

// bucket is one BucketWidth of traffic. epoch is the bucket's number
// (clock nanoseconds / BucketWidth); a bucket whose epoch is not the
// current one holds an older interval and is reused by the next request
// that falls in its slot.
type bucket struct {
	epoch    atomic.Int64
	requests atomic.Uint32
	errors   atomic.Uint32
	latency  [latencySlots]atomic.Uint32
}

// Ring is the recent traffic of one route or one backend. Record is a
// few atomic operations with no lock and no allocation; the zero Ring is
// empty and ready.
type Ring struct {
	buckets [Buckets]bucket
}

// Record counts one request that started at now (clock nanoseconds),
// took latency to its response headers and failed or not. A request
// older than the ring's current interval for its slot (one delayed past
// a rotation) is not counted. Counts added by other requests while a
// slot is being reused may be lost: the figures are a live view, not an
// account.
func (r *Ring) Record(now int64, latency time.Duration, failed bool) {
	epoch := now / int64(BucketWidth)
	b := &r.buckets[slot(epoch)]
	if cur := b.epoch.Load(); cur != epoch {
		if cur > epoch || !b.epoch.CompareAndSwap(cur, epoch) {
			if b.epoch.Load() != epoch {
				return
			}
		} else {
			b.reset()
		}
	}
	b.requests.Add(1)
	if failed {
		b.errors.Add(1)
	}
	b.latency[latencySlot(latency)].Add(1)
}

func (b *bucket) reset() {
	b.requests.Store(0)
	b.errors.Store(0)
	for i := range b.latency {
		b.latency[i].Store(0)
	}
}

func slot(epoch int64) int {
	s := epoch % Buckets
	if s < 0 {
		s += Buckets
	}
	return int(s)
}

// latencySlot is the histogram slot of d: the first bound d does not
// exceed, else the overflow.
func latencySlot(d time.Duration) int {
	for i, b := range LatencyBounds {
		if d <= b {
			return i
		}
	}
	return len(LatencyBounds)
}

// Point is one bucket's figures.
type Point struct {
	// Start is when the bucket's interval began.
	Start    time.Time
	Requests uint64
	Errors   uint64
}

// Summary is a ring read at one instant.
type Summary struct {
	// Requests and Errors are the totals over the Window.
	Requests, Errors uint64
	// Rate is requests per second over the last RateWindow.
	Rate float64
	// P50 and P99 are latency percentiles over the Window, estimated
	// within their histogram bucket; zero without requests.
	P50, P99 time.Duration
	// Points are the Window's buckets, oldest first, the current
	// (partial) one last.
	Points []Point
}

// ErrorRatio is Errors / Requests, 0 without requests.
func (s Summary) ErrorRatio() float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(s.Errors) / float64(s.Requests)
}

// Read sums the buckets of the Window that ends at now (clock
// nanoseconds); buckets older than that are expired and read as zero.
func (r *Ring) Read(now int64) Summary {
	cur := now / int64(BucketWidth)
	rateBuckets := int64(RateWindow / BucketWidth)
	var s Summary
	var hist [latencySlots]uint64
	var rateRequests uint64
	s.Points = make([]Point, Buckets)
	for i := range int64(Buckets) {
		epoch := cur - (Buckets - 1) + i
		p := Point{Start: time.Unix(0, epoch*int64(BucketWidth))}
		b := &r.buckets[slot(epoch)]
		if b.epoch.Load() == epoch {
			p.Requests = uint64(b.requests.Load())
			p.Errors = uint64(b.errors.Load())
			for j := range hist {
				hist[j] += uint64(b.latency[j].Load())
			}
		}
		s.Requests += p.Requests
		s.Errors += p.Errors
		if epoch > cur-rateBuckets {
			rateRequests += p.Requests
		}
		s.Points[i] = p
	}
	s.Rate = float64(rateRequests) / RateWindow.Seconds()
	s.P50 = percentile(hist[:], 0.50)
	s.P99 = percentile(hist[:], 0.99)
	return s
}

// percentile estimates the q-quantile of the histogram: the bucket that
// holds it, interpolated linearly between its bounds (the overflow
// bucket reads as its lower bound).
func percentile(hist []uint64, q float64) time.Duration {
	var total uint64
	for _, n := range hist {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen float64
	for i, n := range hist {
		if n == 0 || seen+float64(n) < rank {
			seen += float64(n)
			continue
		}
		if i == len(LatencyBounds) {
			return LatencyBounds[len(LatencyBounds)-1]
		}
		var lo time.Duration
		if i > 0 {
			lo = LatencyBounds[i-1]
		}
		frac := (rank - seen) / float64(n)
		return lo + time.Duration(frac*float64(LatencyBounds[i]-lo))
	}
	return LatencyBounds[len(LatencyBounds)-1]
}
