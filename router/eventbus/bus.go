// Package eventbus fans the router's events (breaker transitions, routes,
// diagnostics, fallbacks, history samples) out to the views that watch
// them (GET /events, the dashboard) without ever blocking the publisher:
// a subscriber whose buffer is full loses the event, and the loss is
// counted. A Bus also keeps the last Recent events in a ring, and numbers
// every event it publishes (EPOCH-SEQ, the epoch telling one process's
// ids from another's), so that a subscriber can start where an earlier
// view (GET /events/recent, a broken stream) stopped, with no event lost
// or seen twice between the two.
package eventbus

import (
	"strconv"
	"strings"
	"sync"

	"github.com/levee-proxy/levee/router/status"
)

// Recent is how many events a Bus keeps for views that open later (GET
// /events/recent): the last 200, history samples excluded (GET /history
// holds those).
const Recent = 200

// Bus is one router's event bus; its methods are safe for concurrent use.
type Bus struct {
	mu     sync.Mutex
	subs   map[chan status.Event]struct{}
	onDrop func() // told of each event a subscriber lost

	// epoch tells this bus's event ids from another process's; seq is
	// the number of the last event published (guarded by mu).
	epoch string
	seq   uint64

	// recent is the ring of the last events (guarded by mu); next is
	// where the next one goes once it is full.
	recent []status.Event
	next   int
}

// New returns a Bus whose event ids start with epoch (any string
// without "-" that another process will not pick: the router uses its
// start time); onDrop (nil: none) is told of each event a subscriber's
// full buffer lost.
func New(epoch string, onDrop func()) *Bus {
	return &Bus{subs: make(map[chan status.Event]struct{}), onDrop: onDrop, epoch: epoch}
}

// Publish numbers e, keeps it (unless it is a history sample) and sends
// it to every subscriber with room for it.
func (b *Bus) Publish(e status.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e.ID = b.id(b.seq)
	if e.Type != status.EventHistory {
		b.remember(e)
	}
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
			if b.onDrop != nil {
				b.onDrop()
			}
		}
	}
}

func (b *Bus) id(seq uint64) string { return b.epoch + "-" + strconv.FormatUint(seq, 10) }

// Subscribe returns a channel of the events published from now on, with
// room for buffer of them, and the function that ends the subscription.
func (b *Bus) Subscribe(buffer int) (<-chan status.Event, func()) {
	ch, _, cancel := b.SubscribeAfter(buffer, "")
	return ch, cancel
}

// SubscribeAfter subscribes and returns, taken in the same instant, the
// remembered events published after the event with id after: the
// subscriber sees each event once, with none lost between the two. An
// empty after asks for none; an id of another process (or one that
// cannot be read) asks for every remembered event, since all of them are
// newer than anything that process carried. Events older than the ring
// are gone: the replay then starts with the oldest remembered.
func (b *Bus) SubscribeAfter(buffer int, after string) (<-chan status.Event, []status.Event, func()) {
	if buffer < 1 {
		buffer = 1
	}
	ch := make(chan status.Event, buffer)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	var missed []status.Event
	if after != "" {
		missed = b.newerLocked(after)
	}
	b.mu.Unlock()
	var once sync.Once
	return ch, missed, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch) // after removal, so publish never sends on it
		})
	}
}

// remember puts e in the ring of recent events; b.mu is held.
func (b *Bus) remember(e status.Event) {
	if len(b.recent) < Recent {
		b.recent = append(b.recent, e)
		return
	}
	b.recent[b.next] = e
	b.next = (b.next + 1) % Recent
}

// Last returns the recent events, oldest first, and the id of the last
// event published.
func (b *Bus) Last() ([]status.Event, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.orderedLocked(), b.id(b.seq)
}

// orderedLocked is the ring oldest first; b.mu is held.
func (b *Bus) orderedLocked() []status.Event {
	out := make([]status.Event, 0, len(b.recent))
	out = append(out, b.recent[b.next:]...)
	return append(out, b.recent[:b.next]...)
}

// newerLocked returns the remembered events published after the event
// with id after; b.mu is held.
func (b *Bus) newerLocked(after string) []status.Event {
	all := b.orderedLocked()
	epoch, n, ok := strings.Cut(after, "-")
	if !ok || epoch != b.epoch {
		return all
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil || seq > b.seq {
		return all
	}
	for i, e := range all {
		if eventSeq(e.ID) > seq {
			return all[i:]
		}
	}
	return nil
}

// eventSeq is the number in one of this bus's event ids.
func eventSeq(id string) uint64 {
	_, n, _ := strings.Cut(id, "-")
	seq, _ := strconv.ParseUint(n, 10, 64)
	return seq
}
