package router

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// Event types carried by the bus.
const (
	EventBreaker    = "breaker"
	EventRoute      = "route"
	EventDiagnostic = "diagnostic"
)

// Event is one thing that happened in the data plane, for consumers such as
// the API's server-sent events. Data is one of BreakerEvent, RouteEvent or
// DiagnosticEvent and marshals to JSON.
type Event struct {
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	Data any       `json:"data"`
}

// BreakerEvent is a breaker transition.
type BreakerEvent struct {
	Route string `json:"route"`
	// Backend is set for scope=backend breakers.
	Backend string `json:"backend,omitempty"`
	// Event is "opened", "half-open" or "closed"; From and To are states
	// ("closed", "open", "half-open"), spelled as in the API.
	Event string `json:"event"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Rule is why it opened ("error_ratio", …) or "manual" for an operator
	// action; absent otherwise (the metric label says "none" instead).
	Rule string `json:"rule,omitempty"`
	// RetryAfter is, for an opening, the seconds until half-open.
	RetryAfter float64 `json:"retry_after,omitempty"`
	Generation uint64  `json:"generation"`
	// By names who forced a manual transition (API caller), if anyone.
	By string `json:"by,omitempty"`
}

// RouteEvent says a route appeared, changed or went away.
type RouteEvent struct {
	Route  string `json:"route"`
	Source string `json:"source"`
	// Change is "added", "changed" or "removed".
	Change string `json:"change"`
}

// DiagnosticEvent says a diagnostic appeared or went away.
type DiagnosticEvent struct {
	// Change is "added" or "removed".
	Change     string                 `json:"change"`
	Diagnostic diagnostics.Diagnostic `json:"diagnostic"`
}

// bus fans events out to subscribers without ever blocking the publisher:
// a subscriber whose buffer is full loses the event, and the loss is
// counted.
type bus struct {
	mu      sync.Mutex
	subs    map[chan Event]struct{}
	dropped atomic.Uint64
	onDrop  func()
}

func newBus(onDrop func()) *bus {
	return &bus{subs: make(map[chan Event]struct{}), onDrop: onDrop}
}

func (b *bus) publish(e Event) {
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

func (b *bus) subscribe(buffer int) (<-chan Event, func()) {
	if buffer < 1 {
		buffer = 1
	}
	ch := make(chan Event, buffer)
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
