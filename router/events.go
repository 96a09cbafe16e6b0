package router

import (
	"sync"
	"sync/atomic"

	"github.com/levee-proxy/levee/router/status"
)

// RecentEvents is how many events the bus keeps for views that open
// later (GET /events/recent): the last 200, history samples excluded
// (GET /history holds those).
const RecentEvents = 200

// bus fans events out to subscribers without ever blocking the publisher:
// a subscriber whose buffer is full loses the event, and the loss is
// counted. It also keeps the last RecentEvents events in a ring.
type bus struct {
	mu      sync.Mutex
	subs    map[chan status.Event]struct{}
	dropped atomic.Uint64
	onDrop  func()

	// recent is the ring of the last events (guarded by mu); next is
	// where the next one goes once it is full.
	recent []status.Event
	next   int
}

func newBus(onDrop func()) *bus {
	return &bus{subs: make(map[chan status.Event]struct{}), onDrop: onDrop}
}

func (b *bus) publish(e status.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e.Type != status.EventHistory {
		b.remember(e)
	}
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

// remember puts e in the ring of recent events; b.mu is held.
func (b *bus) remember(e status.Event) {
	if len(b.recent) < RecentEvents {
		b.recent = append(b.recent, e)
		return
	}
	b.recent[b.next] = e
	b.next = (b.next + 1) % RecentEvents
}

// last returns the recent events, oldest first.
func (b *bus) last() []status.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]status.Event, 0, len(b.recent))
	out = append(out, b.recent[b.next:]...)
	return append(out, b.recent[:b.next]...)
}
