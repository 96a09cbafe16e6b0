package proxy

import (
	"container/list"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// Stale answers (circuitBreaker.serveStale). While a route's breaker
// refuses requests and no fallback route answers, a GET or HEAD is
// answered with the last 200 answer the route gave to a GET of the same
// URL, if it is at most serveStale old. The answer is marked as what it
// is: Age (RFC 9111 5.1, its age when kept plus the time since),
// X-Levee-Stale with the same seconds, Warning: 110 (RFC 7234 5.5.1; the
// field is obsoleted by RFC 9111 but still read by clients and crawlers),
// and the open breaker's Retry-After.
//
// Keeping answers follows the rules of a shared cache (RFC 9111):
//
//   - only complete 200 answers to GET, never to a request with
//     Cache-Control: no-store (5.2.1.5);
//   - never an answer whose Cache-Control forbids storing it in a shared
//     cache (no-store 5.2.2.5, private 5.2.2.7) or serving it stale
//     (no-cache 5.2.2.4, must-revalidate 5.2.2.2, proxy-revalidate
//     5.2.2.8, s-maxage 5.2.2.10; 4.2.4), nor one with Set-Cookie (it
//     belongs to one client), Vary: * or trailers;
//   - never an answer to a GET that carried a body (Content-Length or
//     Transfer-Encoding): the key is the URL, and the body would shape the
//     answer every client of that URL gets; such a GET is not answered
//     from the cache either;
//   - credentials (stale_key.go): a request with Authorization or Cookie,
//     and every request of a route with basic or forward auth, is neither
//     answered from nor recorded into the cache (3.5: a shared cache must
//     not reuse an answer to an authenticated request), unless
//     serveStaleForCredentials is set. Then answers are kept under a key
//     that includes a hash of every field the route's auth reads or sets,
//     so that a client is only ever answered what was answered to the same
//     credentials;
//   - Vary is honoured: the kept answer is served only to a request with
//     the same values of the varied fields.
//
// The cache is per route and bounded (StaleLimits): entries and bytes,
// least recently used first out; an answer larger than the per-entry
// bound is not kept. Answers are copied as they stream to the client,
// after each write, so keeping one never delays the client; the copy is
// kept only once the whole body arrived. The cache lives as long as the
// route's state and is dropped with it.

// StaleLimits bound one route's stale-answer cache.
type StaleLimits struct {
	// Entries is the most answers kept (default 1024).
	Entries int
	// Bytes is the most bytes kept, bodies, fields and keys (default
	// 16 MiB).
	Bytes int64
	// EntryBytes is the largest answer kept (default 1 MiB, at most
	// Bytes); a larger one is not kept.
	EntryBytes int64
}

// Default stale-cache bounds, per route.
const (
	DefaultStaleEntries    = 1024
	DefaultStaleBytes      = 16 << 20
	DefaultStaleEntryBytes = 1 << 20
)

func (l StaleLimits) withDefaults() StaleLimits {
	if l.Entries <= 0 {
		l.Entries = DefaultStaleEntries
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultStaleBytes
	}
	if l.EntryBytes <= 0 {
		l.EntryBytes = DefaultStaleEntryBytes
	}
	l.EntryBytes = min(l.EntryBytes, l.Bytes)
	return l
}

// staleEntry is one kept answer. Read only once in the cache.
type staleEntry struct {
	key    string
	header http.Header // hop-by-hop fields removed
	body   []byte
	stored time.Time
	age    time.Duration // the Age the answer had when kept
	// vary are the request fields the answer varies on (canonical) and
	// their values in the request it answered.
	vary       []string
	varyValues []string
	size       int64
}

// staleCache is one route's kept answers, least recently used last.
type staleCache struct {
	mu    sync.Mutex
	lim   StaleLimits
	byKey map[string]*list.Element
	lru   list.List
	bytes int64
}

func newStaleCache(lim StaleLimits) *staleCache {
	return &staleCache{lim: lim, byKey: make(map[string]*list.Element)}
}

// put keeps e, replacing the answer kept for its key, and evicts the
// least recently used answers over the bounds.
func (c *staleCache) put(e *staleEntry) {
	if e.size > c.lim.EntryBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.byKey[e.key]; ok {
		c.remove(old)
	}
	c.byKey[e.key] = c.lru.PushFront(e)
	c.bytes += e.size
	for c.lru.Len() > c.lim.Entries || c.bytes > c.lim.Bytes {
		c.remove(c.lru.Back())
	}
}

func (c *staleCache) remove(el *list.Element) {
	e := c.lru.Remove(el).(*staleEntry)
	delete(c.byKey, e.key)
	c.bytes -= e.size
}

// get returns the answer kept for key if it is at most maxAge old at
// now; an older one is dropped.
func (c *staleCache) get(key string, now time.Time, maxAge time.Duration) *staleEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[key]
	if !ok {
		return nil
	}
	e := el.Value.(*staleEntry)
	if now.Sub(e.stored)+e.age > maxAge {
		c.remove(el)
		return nil
	}
	c.lru.MoveToFront(el)
	return e
}

// len returns the number of answers and bytes kept.
func (c *staleCache) len() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

// staleSlot holds a route's cache, made on first use.
type staleSlot struct{ p atomic.Pointer[staleCache] }

func (s *staleSlot) get(lim StaleLimits) *staleCache {
	if c := s.p.Load(); c != nil {
		return c
	}
	c := newStaleCache(lim)
	if s.p.CompareAndSwap(nil, c) {
		return c
	}
	return s.p.Load()
}

func (s *staleSlot) drop() { s.p.Store(nil) }

// staleRecord is an answer being copied as it streams to the client.
type staleRecord struct {
	e     *staleEntry
	limit int64
	over  bool
}

func (r *staleRecord) write(p []byte) {
	if r.over {
		return
	}
	if r.e.size+int64(len(p)) > r.limit {
		r.over, r.e.body = true, nil
		return
	}
	r.e.body = append(r.e.body, p...)
	r.e.size += int64(len(p))
}

// forbidsStale reports whether a Cache-Control field forbids keeping the
// answer in a shared cache or serving it stale (see above).
func forbidsStale(cc []string) bool {
	for _, v := range cc {
		for tok := range strings.SplitSeq(v, ",") {
			name, _, _ := strings.Cut(strings.TrimSpace(tok), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "private", "no-cache", "must-revalidate", "proxy-revalidate", "s-maxage":
				return true
			}
		}
	}
	return false
}

// recordStale starts copying a backend's answer for the stale cache when
// the route keeps stale answers and the rules above allow keeping it.
func (x *exchange) recordStale(resp *http.Response) {
	cb := x.route.Config().CircuitBreaker
	if cb == nil || cb.Fallback.ServeStale <= 0 {
		return
	}
	if r := x.newStaleRecord(cb, resp); r != nil {
		x.fallback().record = r
	}
}

// newStaleRecord readies the copy of an answer the rules allow keeping.
func (x *exchange) newStaleRecord(cb *config.CircuitBreaker, resp *http.Response) *staleRecord {
	if x.origin() != nil || x.req.Method != http.MethodGet || x.carriesBody() ||
		resp.StatusCode != http.StatusOK || len(resp.Trailer) > 0 || len(resp.Header["Set-Cookie"]) > 0 ||
		forbidsStale(resp.Header["Cache-Control"]) || forbidsStale(x.req.Header["Cache-Control"]) {
		return nil
	}
	lim := x.p.opts.Stale
	if resp.ContentLength > lim.EntryBytes {
		return nil
	}
	key, ok := x.staleKey(cb)
	if !ok {
		return nil
	}
	e := &staleEntry{key: key, header: resp.Header.Clone(), stored: x.p.clock.Now()}
	for _, v := range resp.Header["Vary"] {
		for f := range strings.SplitSeq(v, ",") {
			f = http.CanonicalHeaderKey(strings.TrimSpace(f))
			switch f {
			case "":
				continue
			case "*":
				return nil
			}
			e.vary = append(e.vary, f)
			e.varyValues = append(e.varyValues, strings.Join(x.req.Header[f], "\x00"))
		}
	}
	if a, err := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Age"))); err == nil && a > 0 {
		e.age = time.Duration(a) * time.Second
	}
	delete(e.header, "Age")
	e.size = int64(len(key))
	for k, vv := range e.header {
		for _, v := range vv {
			e.size += int64(len(k) + len(v))
		}
	}
	if resp.ContentLength > 0 {
		e.body = make([]byte, 0, resp.ContentLength)
	}
	return &staleRecord{e: e, limit: lim.EntryBytes}
}

// keepStale puts the recorded answer in the route's cache when its whole
// body reached the client (complete).
func (x *exchange) keepStale(complete bool) {
	if x.fb == nil {
		return
	}
	r := x.fb.record
	x.fb.record = nil
	if r == nil || !complete || r.over {
		return
	}
	x.series().stale.get(x.p.opts.Stale).put(r.e)
}

// serveStale answers a GET or HEAD from the route's stale cache; it
// reports whether it did. It counts a miss when the route keeps stale
// answers but has none to give.
func (x *exchange) serveStale(retryAfter time.Duration) bool {
	cb := x.route.Config().CircuitBreaker
	m := x.req.Method
	if cb == nil || cb.Fallback.ServeStale <= 0 || (m != http.MethodGet && m != http.MethodHead) {
		return false
	}
	var e *staleEntry
	if key, ok := x.staleKey(cb); ok && !x.carriesBody() {
		if c := x.series().stale.p.Load(); c != nil {
			e = c.get(key, x.p.clock.Now(), cb.Fallback.ServeStale)
		}
	}
	if e != nil && !e.matchesVary(x.req.Header) {
		e = nil
	}
	if e == nil {
		x.countFallback(x.route, fallbackNone, fallbackKindMiss)
		return false
	}
	x.countFallback(x.route, fallbackNone, fallbackKindStale)
	x.fallback().answeredBy = "stale"
	x.writeStale(e, retryAfter)
	return true
}

func (e *staleEntry) matchesVary(h http.Header) bool {
	for i, f := range e.vary {
		if strings.Join(h[f], "\x00") != e.varyValues[i] {
			return false
		}
	}
	return true
}

// writeStale sends a kept answer, marked as stale.
func (x *exchange) writeStale(e *staleEntry, retryAfter time.Duration) {
	h := x.w.Header()
	for k, vv := range e.header {
		h[k] = slices.Clone(vv)
	}
	age := strconv.Itoa(int((x.p.clock.Now().Sub(e.stored) + e.age) / time.Second))
	h["Age"] = []string{age}
	h[HeaderStale] = []string{age}
	h["Warning"] = valueStaleWarning
	h["Content-Length"] = []string{strconv.Itoa(len(e.body))}
	delete(h, "Transfer-Encoding")
	x.setRetryAfter(h, retryAfter)
	x.status = http.StatusOK
	x.armWrite()
	x.w.WriteHeader(http.StatusOK)
	x.headersAt = time.Since(x.start)
	if x.req.Method != http.MethodHead {
		x.armWrite()
		n, _ := x.w.Write(e.body)
		x.sent += int64(n)
	}
}

// HeaderStale is set on a stale answer to its age in seconds.
const HeaderStale = "X-Levee-Stale"

// valueStaleWarning is the warning of a stale answer (RFC 7234 5.5.1).
var valueStaleWarning = []string{`110 levee "Response is Stale"`}
