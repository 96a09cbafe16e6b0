package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
)

// Defaults of Options.
const (
	DefaultPrefix        = "levee:breaker:"
	DefaultFlushInterval = 50 * time.Millisecond
	// DefaultWindow is the fleet window of breakers that have a count
	// window locally (see the package doc).
	DefaultWindow = 10 * time.Second
	// DefaultRetryFor is how long a batch whose flush failed keeps its
	// window figures; after that it is retried with its exact counts only.
	DefaultRetryFor = 2 * time.Second
	// batchTTL is how long the store remembers a batch id; a batch not
	// acknowledged within batchGiveUp is dropped (and counted), so that a
	// retry can never outlive the memory of its id.
	batchTTL    = 10 * time.Minute
	batchGiveUp = 5 * time.Minute
	// keyTTL is how long a breaker's keys outlive the last flush.
	keyTTL = 24 * time.Hour
)

// Options configure a Store.
type Options struct {
	// Client is the Redis client (see NewClient); required.
	Client redis.UniversalClient
	// Prefix starts every key and the event channel (default
	// DefaultPrefix).
	Prefix string
	// FlushInterval is how often outcomes are sent and the fleet state is
	// read back (default DefaultFlushInterval).
	FlushInterval time.Duration
	// Timeout bounds one flush, and how long New waits for the event
	// subscription to be confirmed; a flush not answered within it failed
	// (default: FlushInterval, at least 20ms).
	Timeout time.Duration
	// FallbackFlushes and FallbackAfter say when the store is gone: after
	// FallbackFlushes failed flushes in a row, with no good one for
	// FallbackAfter, a breaker judges locally (defaults
	// DefaultFallbackFlushes, DefaultFallbackAfter). Until then the store
	// is only late and the breaker keeps the fleet's last state. An answer
	// that makes no sense (W076) falls back at once.
	FallbackFlushes int
	FallbackAfter   time.Duration
	// RejoinFlushes good flushes in a row make a breaker that fell back
	// follow the fleet again (default DefaultRejoinFlushes). A breaker
	// follows from the first good flush after Join.
	RejoinFlushes int
	// Window is the fleet window of breakers with a count window
	// (default DefaultWindow).
	Window time.Duration
	// RetryFor: see DefaultRetryFor.
	RetryFor time.Duration
	// Replica names this process in lease and batch ids (default
	// hostname-pid-random).
	Replica string
	// Logger receives fallback, rejoin and mismatch messages.
	Logger zerolog.Logger
	// Registerer receives the store's metrics (nil: a private registry).
	Registerer prometheus.Registerer
	// OnDiagnostics is called (never concurrently, never under a lock of
	// the store) with the store's complete current diagnostics whenever
	// they change.
	OnDiagnostics func([]diagnostics.Diagnostic)
	// Rand returns a number in [0,1) for cooldown jitter (default
	// math/rand/v2.Float64).
	Rand func() float64
}

// Store shares breakers through Redis. Create it with New, register
// breakers with Join, stop it with Close.
type Store struct {
	opts    Options
	client  redis.UniversalClient
	log     zerolog.Logger
	metrics *metrics
	channel string
	rule    linkRule

	mu      sync.Mutex
	members map[string]*member

	diagMu   sync.Mutex // serialises OnDiagnostics calls
	lastDiag string

	stop context.CancelFunc
	done sync.WaitGroup
}

// New starts a store: its flush loop and its event subscription. It does
// not wait for Redis: breakers stay local until the first flush succeeds.
func New(opts Options) (*Store, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("breaker store: no Redis client")
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Timeout <= 0 {
		opts.Timeout = max(opts.FlushInterval, 20*time.Millisecond)
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.FallbackFlushes <= 0 {
		opts.FallbackFlushes = DefaultFallbackFlushes
	}
	if opts.FallbackAfter <= 0 {
		opts.FallbackAfter = DefaultFallbackAfter
	}
	if opts.RejoinFlushes <= 0 {
		opts.RejoinFlushes = DefaultRejoinFlushes
	}
	if opts.RetryFor <= 0 {
		opts.RetryFor = DefaultRetryFor
	}
	if opts.Replica == "" {
		opts.Replica = defaultReplica()
	}
	if opts.Rand == nil {
		opts.Rand = randFloat
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	s := &Store{
		opts: opts, client: opts.Client, log: opts.Logger,
		metrics: newMetrics(), channel: opts.Prefix + "events",
		rule:    linkRule{fallbackFlushes: opts.FallbackFlushes, fallbackAfter: opts.FallbackAfter, rejoinFlushes: opts.RejoinFlushes},
		members: make(map[string]*member),
	}
	if err := s.metrics.register(opts.Registerer); err != nil {
		return nil, fmt.Errorf("breaker store metrics: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	ps := s.listen(ctx)
	s.done.Add(2)
	go s.flushLoop(ctx)
	go s.subscribe(ctx, ps)
	return s, nil
}

// Close stops flushing, hands every breaker back to local judgement and
// closes the client.
func (s *Store) Close() error {
	s.stop()
	s.done.Wait()
	s.mu.Lock()
	for _, m := range s.members {
		m.b.SetFollowing(false)
		m.b.StopTally()
	}
	s.members = map[string]*member{}
	s.mu.Unlock()
	return s.client.Close()
}

// Replica returns the replica id used in leases and batch ids.
func (s *Store) Replica() string { return s.opts.Replica }

// Join shares breaker b under name. control is how the store applies an
// operator action ("open", "close", "reset") made on any replica to this
// one: the caller does what its own API would (and announces it). The
// breaker judges locally until the first flush succeeds. leave stops
// sharing it (the breaker judges locally again).
func (s *Store) Join(name string, b *breaker.Breaker, control func(action, by string)) (leave func()) {
	m := &member{name: name, b: b, control: control, local: true, keys: s.keys(name), link: link{lastGood: time.Now()}}
	b.StartTally()
	s.mu.Lock()
	if old := s.members[name]; old != nil {
		old.b.SetFollowing(false)
		old.b.StopTally()
	}
	s.members[name] = m
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.members[name] == m {
			delete(s.members, name)
		}
		s.mu.Unlock()
		b.SetFollowing(false)
		b.StopTally()
		s.metrics.forget(name)
		// Its diagnostics go at the next flush: leave may be called under
		// a lock that OnDiagnostics takes.
	}
}

// Shared reports whether the named breaker currently follows the fleet
// (false: it judges locally, as without a store, or during a fallback),
// with the fleet window's outcomes and failures as of the last flush.
func (s *Store) Shared(name string) (fleet bool, windowTotal, windowFailures int) {
	s.mu.Lock()
	m := s.members[name]
	s.mu.Unlock()
	if m == nil {
		return false, 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.local, m.window.Total, m.window.Failures
}

// Window is the fleet window of one breaker, as of the last flush.
type Window struct {
	Total, Failures, Slow int
}

// keys returns a breaker's keys. The name is in a hash tag, so that a
// breaker's keys share one Redis Cluster slot (a script may only touch
// keys of one slot).
func (s *Store) keys(name string) [4]string {
	base := s.opts.Prefix + "{" + name + "}:"
	return [4]string{base + "state", base + "window", base + "counts", base + "leases"}
}

// CountsKey returns the key of a breaker's hash of exact outcome counts
// (fields success, failure, neutral).
func (s *Store) CountsKey(name string) string { return s.keys(name)[2] }

func (s *Store) snapshotMembers() []*member {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*member, 0, len(s.members))
	for _, m := range s.members {
		out = append(out, m)
	}
	return out
}

func (s *Store) member(name string) *member {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members[name]
}

func defaultReplica() string {
	h, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return h + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}
