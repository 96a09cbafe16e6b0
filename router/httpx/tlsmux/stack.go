package tlsmux

// stackFrame is the size of growStack's frame: with the few bytes a new
// goroutine has used, it makes the runtime grow the stack to 16 KiB, the
// largest size it keeps in its per-P caches of free stacks (a 32 KiB
// stack would come from the heap, and cost more than it saves).
const stackFrame = 12 << 10

// growStack grows the calling goroutine's stack while it is shallow.
//
// A new goroutine's stack starts at the average size the runtime has
// seen (a few KiB), and a TLS handshake needs more: the stack would grow
// in the middle of the handshake, dozens of frames deep, and growing it
// walks and adjusts every frame on it. Called first thing in a
// connection's goroutine, the same growth moves two frames
// (docs/performance-history.md, "a stack grown before the handshake").
//
//go:noinline
func growStack(i int) byte {
	var frame [stackFrame]byte
	return frame[i]
}
