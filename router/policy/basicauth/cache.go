package basicauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

// MaxCached bounds a route's cache of verified credentials.
const MaxCached = 1024

// The failure budget of one client address on one route: FailureBurst
// failed checks at once, then one more every FailureEvery. A check that
// would exceed it is refused without running (429, auth-throttled).
// A check that succeeds gives its token back, so a user who types the
// right password never pays for it.
const (
	FailureBurst = 10
	FailureEvery = 6 * time.Second
)

// Cache is a route's basic-auth memory, kept in the route's state across
// rebuilds: the credentials that verified (see the package doc) and each
// client address's failure budget.
type Cache struct {
	key [32]byte
	// macs are HMAC-SHA-256 states under key, reused (hash.Hash is not
	// safe for concurrent use).
	macs sync.Pool
	mu   sync.Mutex
	ok   map[[32]byte]string // HMAC(user, password) → the hash it verified against

	failures *ratelimit.Store[rate.Limiter]
}

// NewCache returns an empty cache with a fresh random key.
func NewCache() *Cache {
	c := &Cache{ok: make(map[[32]byte]string), failures: ratelimit.NewStore[rate.Limiter](0)}
	if _, err := rand.Read(c.key[:]); err != nil {
		panic(fmt.Sprintf("basicauth: no randomness for the cache key: %v", err)) // crypto/rand never fails on supported platforms
	}
	c.macs.New = func() any { return hmac.New(sha256.New, c.key[:]) }
	return c
}

func newFailureBudget() *rate.Limiter { return rate.NewLimiter(rate.Every(FailureEvery), FailureBurst) }

// budget returns client k's failure budget.
func (c *Cache) budget(k ratelimit.Key) *rate.Limiter { return c.failures.Get(k, newFailureBudget) }

func (c *Cache) digest(user, pass string) [32]byte {
	m := c.macs.Get().(hash.Hash)
	m.Reset()
	_, _ = io.WriteString(m, user)
	_, _ = m.Write(zero[:])
	_, _ = io.WriteString(m, pass)
	var d [32]byte
	m.Sum(d[:0])
	c.macs.Put(m)
	return d
}

var zero [1]byte

// hit reports whether d verified against current (the user's hash now).
func (c *Cache) hit(d [32]byte, current string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.ok[d]
	return ok && h == current // both are configured hashes: no client secret to time
}

func (c *Cache) add(d [32]byte, verified string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ok) >= MaxCached {
		clear(c.ok)
	}
	c.ok[d] = verified
}

// Len returns the number of cached credentials.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ok)
}
