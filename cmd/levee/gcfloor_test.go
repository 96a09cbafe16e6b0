package main

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentForPutsTheNextCollectionAtTheFloor(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name        string
		live, floor uint64
		want        int
	}{
		// Nothing live yet: the runtime's minimum goal (4 MiB at
		// GOGC=100) is what sets the goal; 400 puts it at 16 MiB.
		{"before the first collection", 0, 16 * mib, 400},
		// A small heap: capped by the minimum goal, 16 MiB at 400.
		{"small heap", 2 * mib, 16 * mib, 400},
		// 16 = 5 + 5*220/100.
		{"heap a third of the floor", 5 * mib, 16 * mib, 220},
		// Twice the live heap reaches the floor: Go's own pacing.
		{"live heap half the floor", 8 * mib, 16 * mib, 100},
		{"live heap above the floor", 40 * mib, 16 * mib, 100},
		// A floor below the runtime's minimum goal never lowers GOGC.
		{"floor under the runtime minimum", 1 * mib, 2 * mib, 100},
	}
	for _, c := range cases {
		if got := percentFor(c.live, c.floor, 100); got != c.want {
			t.Errorf("%s: percentFor(live %d MiB, floor %d MiB) = %d, want %d",
				c.name, c.live/mib, c.floor/mib, got, c.want)
		}
	}
}

// The floor sets GOGC when it starts and again after every collection,
// with the live heap the collection left; stop gives GOGC back to its base
// and ends the adjustments. The runtime's GC percentage is not touched:
// the setter is the test's.
func TestHeapFloorAdjustsAfterEachCollection(t *testing.T) {
	set := make(chan int, 16)
	var live atomic.Uint64 // read by the finalizer's goroutine
	live.Store(1 << 20)
	h := &heapFloor{
		floor:       16 << 20,
		basePercent: 100,
		live:        live.Load,
		setPercent:  func(p int) { set <- p },
	}
	h.start()
	if got := <-set; got != 400 {
		t.Fatalf("at start: GOGC %d, want 400 (1 MiB live, 16 MiB floor)", got)
	}
	live.Store(12 << 20)
	// Each collection runs the finalizer of the sentinel armed before it;
	// collect until the adjustment arrives.
	deadline := time.Now().Add(10 * time.Second)
	for got := 0; got != 100; {
		runtime.GC()
		select {
		case got = <-set:
			if got != 100 {
				t.Fatalf("after a collection with 12 MiB live: GOGC %d, want 100", got)
			}
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no adjustment after collections for 10 s")
			}
		}
	}
	h.stop()
	if got := <-set; got != 100 {
		t.Fatalf("stop set GOGC %d, want the base 100", got)
	}
	runtime.GC()
	runtime.GC()
	select {
	case got := <-set:
		t.Fatalf("after stop, a collection still set GOGC %d", got)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestLiveHeapReadsTheRuntime(t *testing.T) {
	keep := make([]*[1 << 10]byte, 1024) // 1 MiB live across the collection
	for i := range keep {
		keep[i] = new([1 << 10]byte)
	}
	runtime.GC()
	if got := liveHeap(); got < 1<<20 {
		t.Fatalf("live heap after a collection holding 1 MiB: %d bytes", got)
	}
	runtime.KeepAlive(keep)
}
