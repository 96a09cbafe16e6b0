package traffic

import (
	"sync"
	"testing"
	"time"
)

// at is clock nanoseconds d after an arbitrary start that is not aligned
// on a bucket.
func at(d time.Duration) int64 { return int64(1_000_000*time.Hour + 3*time.Second + d) }

func TestRingCountsRequestsAndErrors(t *testing.T) {
	var r Ring
	for i := range 10 {
		r.Record(at(time.Duration(i)*time.Second), 3*time.Millisecond, i%4 == 0)
	}
	s := r.Read(at(10 * time.Second))
	if s.Requests != 10 || s.Errors != 3 {
		t.Fatalf("requests, errors = %d, %d; want 10, 3", s.Requests, s.Errors)
	}
	if got := s.ErrorRatio(); got != 0.3 {
		t.Errorf("error ratio = %v, want 0.3", got)
	}
	if want := 10 / RateWindow.Seconds(); s.Rate != want {
		t.Errorf("rate = %v, want %v", s.Rate, want)
	}
	if len(s.Points) != Buckets {
		t.Fatalf("%d points, want %d", len(s.Points), Buckets)
	}
	var sum uint64
	for _, p := range s.Points {
		sum += p.Requests
	}
	if sum != 10 {
		t.Errorf("points sum to %d requests, want 10", sum)
	}
	if last := s.Points[Buckets-1]; !last.Start.Equal(time.Unix(0, at(10*time.Second)/int64(BucketWidth)*int64(BucketWidth))) {
		t.Errorf("last point starts at %v, want the current bucket", last.Start)
	}
}

func TestRingRotatesAndExpires(t *testing.T) {
	var r Ring
	r.Record(at(0), time.Millisecond, true)
	// A full ring later the same slot holds a new interval: the old
	// request is gone, the new one counted alone.
	r.Record(at(Window), time.Millisecond, false)
	s := r.Read(at(Window))
	if s.Requests != 1 || s.Errors != 0 {
		t.Fatalf("after rotation: requests, errors = %d, %d; want 1, 0", s.Requests, s.Errors)
	}
	// Read a window later with nothing recorded: everything expired.
	if s := r.Read(at(2*Window + BucketWidth)); s.Requests != 0 || s.P99 != 0 {
		t.Fatalf("after expiry: %+v", s)
	}
	// Within the window, a bucket from 4 minutes ago still counts, but
	// not toward the one-minute rate.
	var q Ring
	q.Record(at(0), time.Millisecond, false)
	s = q.Read(at(4 * time.Minute))
	if s.Requests != 1 || s.Rate != 0 {
		t.Fatalf("4 min later: requests %d rate %v; want 1, 0", s.Requests, s.Rate)
	}
}

func TestRingDropsRequestsOlderThanTheirSlot(t *testing.T) {
	var r Ring
	r.Record(at(Window), time.Millisecond, false)
	r.Record(at(0), time.Millisecond, false) // same slot, a ring earlier
	if s := r.Read(at(Window)); s.Requests != 1 {
		t.Fatalf("requests = %d, want 1 (the late one dropped)", s.Requests)
	}
}

func TestRingPercentiles(t *testing.T) {
	var r Ring
	// 98 fast requests (≤ 1 ms) and 2 slow ones (between 250 and 500 ms).
	for range 98 {
		r.Record(at(0), 800*time.Microsecond, false)
	}
	r.Record(at(0), 300*time.Millisecond, false)
	r.Record(at(0), 400*time.Millisecond, false)
	s := r.Read(at(0))
	if s.P50 <= 0 || s.P50 > time.Millisecond {
		t.Errorf("p50 = %v, want in (0, 1ms]", s.P50)
	}
	if s.P99 <= 250*time.Millisecond || s.P99 > 500*time.Millisecond {
		t.Errorf("p99 = %v, want in (250ms, 500ms]", s.P99)
	}
	// Slower than every bound: the overflow reads as the last bound.
	var slow Ring
	slow.Record(at(0), time.Minute, false)
	if s := slow.Read(at(0)); s.P50 != LatencyBounds[len(LatencyBounds)-1] {
		t.Errorf("overflow p50 = %v, want %v", s.P50, LatencyBounds[len(LatencyBounds)-1])
	}
}

func TestRingConcurrentRecords(t *testing.T) {
	var r Ring
	// The slot is taken before the goroutines start: counts added while a
	// slot is being reused may be lost (Record's documented rule), any
	// other count never is.
	r.Record(at(0), 0, false)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				r.Record(at(time.Duration(g)*time.Millisecond), time.Duration(i)*time.Microsecond, i%10 == 0)
			}
		})
	}
	wg.Wait()
	if s := r.Read(at(time.Second)); s.Requests != 8001 || s.Errors != 800 {
		t.Fatalf("requests, errors = %d, %d; want 8001, 800", s.Requests, s.Errors)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	var r Ring
	n := at(0)
	if a := testing.AllocsPerRun(100, func() { r.Record(n, time.Millisecond, false) }); a != 0 {
		t.Fatalf("Record allocates %v times", a)
	}
}

// BenchmarkRecordParallel is the request path's cost: every goroutine
// records into one route's ring, as concurrent requests do.
func BenchmarkRecordParallel(b *testing.B) {
	var r Ring
	n := at(0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Record(n, time.Millisecond, false)
		}
	})
}
