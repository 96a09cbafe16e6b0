package breaker

// window holds the closed-state outcomes the ratio rules are judged on.
// It is either a ring of the last size outcomes (count window: no clock
// needed) or a ring of timeBuckets time buckets (time window). Sums are
// maintained incrementally so judging is O(1).
type window struct {
	timed bool

	// count window
	ring []uint8 // outcome flags, oldest at next once full
	next int
	n    int

	// time window
	buckets []bucket
	width   int64 // nanoseconds per bucket
	head    int64 // bucket number (now/width) of the newest bucket
	headEnd int64 // (head+1)*width: where the next bucket starts

	total, failures, slow int
}

type bucket struct{ total, failures, slow int32 }

const (
	flagFailure uint8 = 1 << iota
	flagSlow
)

// timeBuckets is the number of buckets of a time window: outcomes leave the
// window between window-window/10 and window after they were recorded.
const timeBuckets = 10

func newWindow(p *Params) window {
	if p.Window > 0 {
		width := int64(p.Window) / timeBuckets
		return window{timed: true, buckets: make([]bucket, timeBuckets), width: width, headEnd: width}
	}
	return window{ring: make([]uint8, p.MinRequests)}
}

// sameShape reports whether a window built for p would be the same kind and
// size as w, so it can be kept across a parameter change.
func (w *window) sameShape(p *Params) bool {
	if p.Window > 0 {
		return w.timed && w.width == int64(p.Window)/timeBuckets
	}
	return !w.timed && len(w.ring) == p.MinRequests
}

func (w *window) reset() {
	clear(w.ring)
	clear(w.buckets)
	w.next, w.n = 0, 0
	w.total, w.failures, w.slow = 0, 0, 0
}

// add records one outcome; now is only read by a time window. It reports
// whether this outcome filled a count window.
func (w *window) add(flags uint8, now int64) (filled bool) {
	if w.timed {
		w.advance(now)
		b := &w.buckets[w.head%timeBuckets]
		b.total++
		w.total++
		if flags&flagFailure != 0 {
			b.failures++
			w.failures++
		}
		if flags&flagSlow != 0 {
			b.slow++
			w.slow++
		}
		return false
	}
	if w.n == len(w.ring) {
		old := w.ring[w.next]
		w.total--
		w.failures -= int(old & flagFailure)
		w.slow -= int(old&flagSlow) >> 1
	} else {
		w.n++
		filled = w.n == len(w.ring)
	}
	w.ring[w.next] = flags
	w.total++
	w.failures += int(flags & flagFailure)
	w.slow += int(flags&flagSlow) >> 1
	w.next++
	if w.next == len(w.ring) {
		w.next = 0
	}
	return filled
}

// advance drops the buckets that have left a time window by now.
func (w *window) advance(now int64) {
	if !w.timed {
		return
	}
	if now < w.headEnd {
		return // still in the newest bucket: no division needed
	}
	idx := now / w.width
	if idx <= w.head {
		return
	}
	steps := idx - w.head
	if steps >= timeBuckets {
		clear(w.buckets)
		w.total, w.failures, w.slow = 0, 0, 0
	} else {
		for i := int64(1); i <= steps; i++ {
			b := &w.buckets[(w.head+i)%timeBuckets]
			w.total -= int(b.total)
			w.failures -= int(b.failures)
			w.slow -= int(b.slow)
			*b = bucket{}
		}
	}
	w.head = idx
	w.headEnd = (idx + 1) * w.width
}
