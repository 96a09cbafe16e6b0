// Package shardmap is a string-keyed map split into shards by a hash of
// the key, copied on write shard by shard: a map built from another by an
// Edit copies only the shards the edit writes and shares the others. The
// router's snapshots keep their indexes in them, so that at 10,000 routes
// a write that changes one route copies a few hundred entries of the id
// and host indexes instead of all 20,000, and leaves that much less for
// the collector. A published Map is never written.
package shardmap

import "hash/maphash"

// Shards is how many maps a Map splits its keys over.
const Shards = 64

// Map is a sharded map; its zero value is not usable (see New). Reads are
// safe for concurrent use; it is never written once built.
type Map[V any] struct {
	seed maphash.Seed
	m    *[Shards]map[string]V
	n    int
}

// New returns an empty Map whose shards are chosen by seed.
func New[V any](seed maphash.Seed) Map[V] {
	return Map[V]{seed: seed, m: new([Shards]map[string]V)}
}

func (s Map[V]) shard(k string) int { return int(maphash.String(s.seed, k) % Shards) }

// Get returns k's value.
func (s Map[V]) Get(k string) (V, bool) {
	v, ok := s.m[s.shard(k)][k]
	return v, ok
}

// GetBytes is Get for a key held as bytes; m[string(b)] does not convert
// (allocate) the slice.
func (s Map[V]) GetBytes(b []byte) (V, bool) {
	v, ok := s.m[maphash.Bytes(s.seed, b)%Shards][string(b)]
	return v, ok
}

// Len is the number of keys.
func (s Map[V]) Len() int { return s.n }

// Each calls f for every entry, in no particular order.
func (s Map[V]) Each(f func(k string, v V)) {
	for _, m := range s.m {
		for k, v := range m {
			f(k, v)
		}
	}
}

// Edit is a writable copy of a Map: a shard is copied the first
// time the edit writes to it, the others stay shared with the original.
type Edit[V any] struct {
	s     Map[V]
	owned [Shards]bool
}

// Edit returns a writable copy of s; s does not change.
func (s Map[V]) Edit() *Edit[V] {
	m := *s.m
	return &Edit[V]{s: Map[V]{seed: s.seed, m: &m, n: s.n}}
}

func (e *Edit[V]) writable(i int) map[string]V {
	if !e.owned[i] {
		c := make(map[string]V, len(e.s.m[i])+1)
		for k, v := range e.s.m[i] {
			c[k] = v
		}
		e.s.m[i] = c
		e.owned[i] = true
	}
	return e.s.m[i]
}

// Set sets k to v.
func (e *Edit[V]) Set(k string, v V) {
	m := e.writable(e.s.shard(k))
	if _, ok := m[k]; !ok {
		e.s.n++
	}
	m[k] = v
}

// Delete removes k.
func (e *Edit[V]) Delete(k string) {
	i := e.s.shard(k)
	if _, ok := e.s.m[i][k]; !ok {
		return
	}
	delete(e.writable(i), k)
	e.s.n--
}

// Get returns k's value in the edit.
func (e *Edit[V]) Get(k string) (V, bool) { return e.s.Get(k) }

// Done returns the edited map; the edit must not be used afterwards.
func (e *Edit[V]) Done() Map[V] { return e.s }
