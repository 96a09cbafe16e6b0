package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// A heapFloor lets the heap grow to at least floor bytes between two
// garbage collections, and paces the collector as GOGC=basePercent above
// that.
//
// Why: Go starts a collection when the heap has grown by GOGC percent (100)
// over what the last one found live. A proxy's live heap is small with a
// few routes while it allocates fast (above all crypto/tls, for every new
// TLS connection), so at Go's default the collector runs many times a
// second for little garbage each time (docs/performance-history.md, "the heap
// floor"). With the floor, a small heap is collected when it reaches the
// floor; a heap whose live part is above floor/2 is paced exactly as
// before.
//
// After each collection (seen through a finalizer, which the runtime runs
// once the collection that found its object unreachable is over), the
// floor sets GOGC to the percentage that puts the next collection at the
// floor, or to basePercent when that is higher.
type heapFloor struct {
	floor       uint64
	basePercent int
	live        func() uint64     // the heap the last collection found live
	setPercent  func(percent int) // debug.SetGCPercent
	stopped     atomic.Bool
}

// runtimeHeapMinimum is the runtime's smallest heap goal at GOGC=100; it
// scales with GOGC (a goal is never below runtimeHeapMinimum*GOGC/100).
const runtimeHeapMinimum = 4 << 20

// newHeapFloor returns the runtime's heap floor of floor bytes.
func newHeapFloor(floor uint64) *heapFloor {
	return &heapFloor{
		floor:       floor,
		basePercent: 100,
		live:        liveHeap,
		setPercent:  func(p int) { debug.SetGCPercent(p) },
	}
}

// percentFor is the GOGC that puts the next collection at the floor for a
// live heap of live bytes, and never below base. The runtime's goal is the
// larger of live*(1+GOGC/100) (plus stacks and globals) and
// runtimeHeapMinimum*GOGC/100: the percentage is bounded so that the
// second is not above the floor either (before the first collection, when
// nothing is known live, it is what sets the goal).
func percentFor(live, floor uint64, base int) int {
	if live*uint64(100+base)/100 >= floor {
		return base
	}
	p := floor * 100 / runtimeHeapMinimum
	if live > 0 {
		p = min(p, (floor-live)*100/live)
	}
	return max(int(p), base)
}

// start paces the collector now and after every collection until stop.
func (h *heapFloor) start() {
	h.adjust()
	h.arm()
}

// stop gives the collector back to Go's default pacing (GOGC=basePercent).
func (h *heapFloor) stop() {
	h.stopped.Store(true)
	h.setPercent(h.basePercent)
}

func (h *heapFloor) adjust() {
	h.setPercent(percentFor(h.live(), h.floor, h.basePercent))
}

// gcSentinel is garbage from birth: its finalizer runs after the next
// collection. It holds a pointer so that it is never a tiny allocation
// (those may never be finalized).
type gcSentinel struct{ h *heapFloor }

func (h *heapFloor) arm() {
	runtime.SetFinalizer(&gcSentinel{h: h}, func(s *gcSentinel) {
		if s.h.stopped.Load() {
			return
		}
		s.h.adjust()
		s.h.arm()
	})
}

// liveHeap is the heap the last collection marked live ("/gc/heap/live").
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
