package ratelimit

import (
	"hash/maphash"
	"sync"
)

// DefaultMaxKeys bounds the keys a Store keeps per route. At about 150
// bytes a key (the map slot, the fixed-size Key, the value), 65,536 keys
// are about 10 MB in the worst case, whatever the number of clients.
const DefaultMaxKeys = 1 << 16

const shards = 16

// Store keeps a value per key with a fixed bound on the number of keys,
// for the rate limit's buckets and the in-flight counters. Each shard has
// two generations: lookups go to the current one and promote from the
// previous; when the current one is full, the previous is dropped and the
// current becomes the previous. A key unused for a whole generation is
// forgotten, so a flood of distinct clients costs at most the bound and
// evicts the oldest keys first, never the ones in steady use.
//
// Forgetting a rate-limit bucket is safe: a bucket left alone refills, so
// a forgotten key that comes back gets the full bucket it would mostly
// have had anyway; the bound only shortens the memory of clients idle
// while the flood lasts.
type Store[V any] struct {
	seed   maphash.Seed
	max    int // per shard and generation
	shards [shards]shard[V]
}

type shard[V any] struct {
	mu        sync.Mutex
	cur, prev map[Key]*V
}

// NewStore returns a Store of at most maxKeys keys (DefaultMaxKeys when
// maxKeys <= 0).
func NewStore[V any](maxKeys int) *Store[V] {
	if maxKeys <= 0 {
		maxKeys = DefaultMaxKeys
	}
	s := &Store[V]{seed: maphash.MakeSeed(), max: max(1, maxKeys/(2*shards))}
	for i := range s.shards {
		s.shards[i].cur = make(map[Key]*V)
	}
	return s
}

func (s *Store[V]) shard(k Key) *shard[V] {
	var h maphash.Hash
	h.SetSeed(s.seed)
	b := k.addr.As16()
	_, _ = h.Write(b[:])
	return &s.shards[(h.Sum64()^k.hash)%shards]
}

// Get returns k's value, created by create when the key is new (or was
// forgotten). The value outlives the lock: it must be safe for
// concurrent use (a rate.Limiter, an atomic counter).
func (s *Store[V]) Get(k Key, create func() *V) *V {
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	v := sh.cur[k]
	if v != nil {
		return v
	}
	if v = sh.prev[k]; v != nil {
		delete(sh.prev, k)
	} else {
		v = create()
	}
	if len(sh.cur) >= s.max {
		sh.prev, sh.cur = sh.cur, make(map[Key]*V, s.max)
	}
	sh.cur[k] = v
	return v
}

// Len returns the number of keys kept.
func (s *Store[V]) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.cur) + len(sh.prev)
		sh.mu.Unlock()
	}
	return n
}

// MaxKeys returns the bound on Len.
func (s *Store[V]) MaxKeys() int { return 2 * shards * s.max }
