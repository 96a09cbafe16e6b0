package router

import (
	"sync"
	"sync/atomic"

	"github.com/levee-proxy/levee/router/status"
)

// bus fans events out to subscribers without ever blocking the publisher:
// a subscriber whose buffer is full loses the event, and the loss is
// counted.
type bus struct {
	mu      sync.Mutex
	subs    map[chan status.Event]struct{}
	dropped atomic.Uint64
	onDrop  func()
}

func newBus(onDrop func()) *bus {
	return &bus{subs: make(map[chan status.Event]struct{}), onDrop: onDrop}
}

func (b *bus) publish(e status.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
			b.dropped.Add(1)
			if b.onDrop != nil {
				b.onDrop()
			}
		}
	}
}

func (b *bus) subscribe(buffer int) (<-chan status.Event, func()) {
	if buffer < 1 {
		buffer = 1
	}
	ch := make(chan status.Event, buffer)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch) // after removal, so publish never sends on it
		})
	}
}
