package ratelimit

import (
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

func newPolicy(t testing.TB, cfg config.RateLimit, b *Buckets) (*Policy, *policytest.Clock, *policytest.Recorder) {
	t.Helper()
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	rec := &policytest.Recorder{}
	if b == nil {
		b = NewBuckets(0)
	}
	return New(&cfg, b, policy.Env{Route: "r", Rec: rec, Now: clk.Now}), clk, rec
}

func TestTokenBucket(t *testing.T) {
	// 2 requests per second, bursts of 2.
	p, clk, rec := newPolicy(t, config.RateLimit{Average: 2, Period: time.Second, Burst: 2, SourceCriterion: config.CriterionIP}, nil)
	steps := []struct {
		advance time.Duration
		want    int
		retry   string
	}{
		{0, 200, ""}, {0, 200, ""}, {0, 429, "1"}, // burst used up
		{250 * time.Millisecond, 429, "1"}, // half a token back
		{250 * time.Millisecond, 200, ""},  // one token back
		{0, 429, "1"},
		{2 * time.Second, 200, ""}, {0, 200, ""}, {0, 429, "1"}, // refilled to the burst, not beyond
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		res := policytest.Run(p, policytest.Request("192.0.2.1:1"))
		if res.Code != s.want {
			t.Fatalf("step %d: status %d, want %d", i, res.Code, s.want)
		}
		if s.want != 429 {
			continue
		}
		h := res.Header
		if h.Get("Retry-After") != s.retry || h.Get(policy.HeaderDiagnostic) != policy.ReasonRateLimited {
			t.Fatalf("step %d: headers %v", i, h)
		}
		if h.Get("RateLimit-Policy") != `"levee";q=2;w=1` || h.Get("RateLimit") != `"levee";r=0;t=`+s.retry {
			t.Fatalf("step %d: RateLimit headers %q %q", i, h.Get("RateLimit-Policy"), h.Get("RateLimit"))
		}
	}
	if rec.Count() != 4 || rec.Got[0] != Name+"/"+policy.ReasonRateLimited {
		t.Fatalf("counted %v", rec.Got)
	}
}

func TestRetryAfterLongPeriod(t *testing.T) {
	// 1 request per minute: the next token is 60s away.
	p, clk, _ := newPolicy(t, config.RateLimit{Average: 1, Period: time.Minute, Burst: 1}, nil)
	policytest.Run(p, policytest.Request("192.0.2.1:1"))
	clk.Advance(15 * time.Second)
	res := policytest.Run(p, policytest.Request("192.0.2.1:1"))
	if res.Code != 429 || res.Header.Get("Retry-After") != "45" || res.Header.Get("RateLimit-Policy") != `"levee";q=1;w=60` {
		t.Fatalf("%d %v", res.Code, res.Header)
	}
}

func TestSourceCriteria(t *testing.T) {
	for _, c := range []struct {
		crit          string
		same, differs func(r *http.Request)
	}{
		{config.CriterionIP, func(r *http.Request) { r.Host = "other.test" }, func(r *http.Request) { r.RemoteAddr = "192.0.2.2:1" }},
		{config.CriterionHost, func(r *http.Request) { r.RemoteAddr = "192.0.2.2:1"; r.Host = "APP.test" }, func(r *http.Request) { r.Host = "other.test" }},
		{"header:X-Api-Key", func(r *http.Request) { r.RemoteAddr = "192.0.2.2:1"; r.Header.Set("X-Api-Key", "k1") }, func(r *http.Request) { r.Header.Set("X-Api-Key", "k2") }},
	} {
		t.Run(c.crit, func(t *testing.T) {
			p, _, _ := newPolicy(t, config.RateLimit{Average: 1, Period: time.Hour, Burst: 1, SourceCriterion: c.crit}, nil)
			base := func() *http.Request {
				r := policytest.Request("192.0.2.1:1")
				r.Header.Set("X-Api-Key", "k1")
				return r
			}
			if policytest.Run(p, base()).Code != 200 {
				t.Fatal("first request refused")
			}
			r := base()
			c.same(r)
			if got := policytest.Run(p, r).Code; got != 429 {
				t.Fatalf("same key: %d, want 429", got)
			}
			r = base()
			c.differs(r)
			if got := policytest.Run(p, r).Code; got != 200 {
				t.Fatalf("other key: %d, want 200", got)
			}
		})
	}
}

// With sourceCriterion=host, every spelling of a host that routing takes
// for it shares its bucket.
func TestHostCriterionSpellings(t *testing.T) {
	p, _, _ := newPolicy(t, config.RateLimit{Average: 1, Period: time.Hour, Burst: 1, SourceCriterion: config.CriterionHost}, nil)
	r := policytest.Request("192.0.2.1:1")
	r.Host = "h.test"
	if got := policytest.Run(p, r).Code; got != 200 {
		t.Fatalf("first request: %d", got)
	}
	for _, h := range []string{"h.test:1", "h.test:20", "h.test.", "H.TEST.:80", "[h.test]", "H.test"} {
		r := policytest.Request("192.0.2.1:1")
		r.Host = h
		if got := policytest.Run(p, r).Code; got != 429 {
			t.Errorf("Host %q: %d, want 429 (h.test's bucket)", h, got)
		}
	}
	r = policytest.Request("192.0.2.1:1")
	r.Host = "h2.test"
	if got := policytest.Run(p, r).Code; got != 200 {
		t.Errorf("another host: %d, want 200", got)
	}
	crit := NewCriterion(config.CriterionHost, policy.Env{})
	r.Host = "App.Example.COM.:8443"
	if n := testing.AllocsPerRun(100, func() { _, _ = crit.Of(r) }); n != 0 {
		t.Errorf("keying by host: %v allocations, want 0", n)
	}
}

// Buckets outlive a recompile (a new snapshot), and new parameters apply
// to them.
func TestBucketsOutliveRecompile(t *testing.T) {
	b := NewBuckets(0)
	cfg := config.RateLimit{Average: 1, Period: time.Hour, Burst: 1}
	p, _, _ := newPolicy(t, cfg, b)
	policytest.Run(p, policytest.Request("192.0.2.1:1"))
	p2, _, _ := newPolicy(t, cfg, b)
	if got := policytest.Run(p2, policytest.Request("192.0.2.1:1")).Code; got != 429 {
		t.Fatalf("recompiled policy refilled the bucket: %d", got)
	}
	// 3600 an hour: a token a second, from the bucket's next request on.
	cfg.Average = 3600
	p3, clk, _ := newPolicy(t, cfg, b)
	if got := policytest.Run(p3, policytest.Request("192.0.2.1:1")).Code; got != 429 {
		t.Fatalf("new average refilled the bucket: %d", got)
	}
	clk.Advance(time.Second)
	if got := policytest.Run(p3, policytest.Request("192.0.2.1:1")).Code; got != 200 {
		t.Fatalf("new average not applied: %d", got)
	}
}

// 100,000 distinct client addresses keep the store at its bound: the key
// count never passes MaxKeys and the heap grows by a bounded amount.
func TestDistinctClientsBounded(t *testing.T) {
	const clients = 100_000
	b := NewBuckets(0)
	p, _, _ := newPolicy(t, config.RateLimit{Average: 10, Period: time.Second, Burst: 10}, b)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	r := policytest.Request("")
	w := discard{}
	for i := range clients {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		r.RemoteAddr = a.String() + ":" + strconv.Itoa(1024+i%1000)
		p.Serve(w, r, next)
		if n := b.Len(); n > b.MaxKeys() {
			t.Fatalf("after %d clients: %d keys, bound %d", i+1, n, b.MaxKeys())
		}
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if b.MaxKeys() != DefaultMaxKeys {
		t.Fatalf("bound %d, want %d", b.MaxKeys(), DefaultMaxKeys)
	}
	// About 150 bytes a key (Key, map slot, rate.Limiter); allow 4x.
	const perKey = 600
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > int64(DefaultMaxKeys*perKey) {
		t.Fatalf("heap grew %d bytes for %d keys (bound %d)", grown, b.Len(), DefaultMaxKeys*perKey)
	}
	t.Logf("%d clients: %d keys kept (bound %d), heap %+d bytes", clients, b.Len(), b.MaxKeys(), int64(after.HeapAlloc)-int64(before.HeapAlloc))
	// The most recent client still has its bucket.
	if b.Len() == 0 {
		t.Fatal("store emptied")
	}
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}

func BenchmarkRateLimit(b *testing.B) {
	p, _, _ := newPolicy(b, config.RateLimit{Average: 1_000_000_000, Period: time.Second, Burst: 1_000_000_000}, nil)
	p.now = time.Now
	r := policytest.Request("192.0.2.1:1")
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(nil, r, next)
	}
}

// A criterion header sent twice cannot be keyed for certain: a random
// first value beside the real one would make every request a bucket of
// its own (and the backend may read either). It is refused, 400
// bad-header, for rate and in-flight limits alike, and spends no token.
func TestHeaderCriterionSentTwiceIsRefused(t *testing.T) {
	p, _, _ := newPolicy(t, config.RateLimit{Average: 1, Period: time.Minute, Burst: 1, SourceCriterion: "header:X-Api-Key"}, nil)
	twice := func(first string) *http.Request {
		r := policytest.Request("192.0.2.1:1")
		r.Header["X-Api-Key"] = []string{first, "real"}
		return r
	}
	for i, first := range []string{"random-1", "random-2"} {
		res := policytest.Run(p, twice(first))
		if res.Code != http.StatusBadRequest || res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonBadHeader || res.Reached {
			t.Fatalf("request %d with X-Api-Key twice: %d %q reached=%v, want 400 bad-header", i, res.Code, res.Header.Get(policy.HeaderDiagnostic), res.Reached)
		}
	}
	once := policytest.Request("192.0.2.1:1")
	once.Header.Set("X-Api-Key", "real")
	if res := policytest.Run(p, once); res.Code != http.StatusOK {
		t.Fatalf("the real key once: %d, want 200 (the refused requests spent no token)", res.Code)
	}
}
