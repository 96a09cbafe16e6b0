package tlsmux

import (
	"testing"
	"unsafe"
)

// frame8K needs an 8 KiB frame: it fits on a stack growStack has grown.
//
//go:noinline
func frame8K(i int) byte {
	var frame [8 << 10]byte
	return frame[i]
}

// A goroutine's stack moves when it grows; the address of one of its
// locals tells whether it did. growStack must grow a new goroutine's
// stack (the compiler must keep its frame), and to at least 16 KiB: an
// 8 KiB frame after it must not grow it again.
func TestGrowStackGrowsANewStackOnce(t *testing.T) {
	at := make(chan [3]uintptr)
	go func() {
		var local byte
		before := uintptr(unsafe.Pointer(&local))
		growStack(0)
		grown := uintptr(unsafe.Pointer(&local))
		frame8K(0)
		after := uintptr(unsafe.Pointer(&local))
		at <- [3]uintptr{before, grown, after}
	}()
	a := <-at
	if a[0] == a[1] {
		t.Errorf("growStack did not move a new goroutine's stack (a local stayed at %#x)", a[0])
	}
	if a[1] != a[2] {
		t.Errorf("an 8 KiB frame after growStack moved the stack again (%#x to %#x): it is smaller than 16 KiB", a[1], a[2])
	}
}
