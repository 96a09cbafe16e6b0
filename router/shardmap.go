package router

import "hash/maphash"

// shards is how many maps a shardMap splits its keys over.
const shards = 64

// shardMap is a string-keyed map split into shards by a hash of the key,
// so that a snapshot built from the previous one copies only the shards
// its change touches: at 10,000 routes, a write that changes one route
// copies a few hundred entries of the id and host indexes instead of all
// 20,000, and leaves that much less for the collector. A
// published shardMap is never written; edit returns a writable copy.
type shardMap[V any] struct {
	seed maphash.Seed
	m    *[shards]map[string]V
	n    int
}

func newShardMap[V any](seed maphash.Seed) shardMap[V] {
	return shardMap[V]{seed: seed, m: new([shards]map[string]V)}
}

func (s shardMap[V]) shard(k string) int { return int(maphash.String(s.seed, k) % shards) }

func (s shardMap[V]) get(k string) (V, bool) {
	v, ok := s.m[s.shard(k)][k]
	return v, ok
}

// getBytes is get for a key held as bytes; m[string(b)] does not convert
// (allocate) the slice.
func (s shardMap[V]) getBytes(b []byte) (V, bool) {
	v, ok := s.m[maphash.Bytes(s.seed, b)%shards][string(b)]
	return v, ok
}

func (s shardMap[V]) len() int { return s.n }

// each calls f for every entry, in no particular order.
func (s shardMap[V]) each(f func(k string, v V)) {
	for _, m := range s.m {
		for k, v := range m {
			f(k, v)
		}
	}
}

// shardEdit is a writable copy of a shardMap: a shard is copied the first
// time the edit writes to it, the others stay shared with the original.
type shardEdit[V any] struct {
	s     shardMap[V]
	owned [shards]bool
}

func (s shardMap[V]) edit() *shardEdit[V] {
	m := *s.m
	return &shardEdit[V]{s: shardMap[V]{seed: s.seed, m: &m, n: s.n}}
}

func (e *shardEdit[V]) writable(i int) map[string]V {
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

func (e *shardEdit[V]) set(k string, v V) {
	m := e.writable(e.s.shard(k))
	if _, ok := m[k]; !ok {
		e.s.n++
	}
	m[k] = v
}

func (e *shardEdit[V]) delete(k string) {
	i := e.s.shard(k)
	if _, ok := e.s.m[i][k]; !ok {
		return
	}
	delete(e.writable(i), k)
	e.s.n--
}

func (e *shardEdit[V]) get(k string) (V, bool) { return e.s.get(k) }

// done returns the edited map; the edit must not be used afterwards.
func (e *shardEdit[V]) done() shardMap[V] { return e.s }
