package basicauth

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

func authFrom(peer, user, pass string) *http.Request {
	r := policytest.Request(peer)
	r.SetBasicAuth(user, pass)
	return r
}

// A client address that keeps failing is refused without a check once
// its budget is spent (429 auth-throttled, Retry-After), never reaching
// the backend; its right password, once cached, still gets in; other
// addresses are unaffected; the budget refills.
func TestFailureBudget(t *testing.T) {
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	rec := &policytest.Recorder{}
	p, _, err := New(&config.BasicAuth{Users: []string{line(t, "admin", "s3cret")}}, NewCache(), NewSlots(1, 0), policy.Env{Route: "r", Rec: rec, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	const attacker = "198.51.100.7:1"
	if res := policytest.Run(p, authFrom(attacker, "admin", "s3cret")); res.Code != 200 {
		t.Fatalf("right password: %d", res.Code)
	}
	for i := range FailureBurst {
		if res := policytest.Run(p, authFrom(attacker, "admin", "guess"+strconv.Itoa(i))); res.Code != 401 {
			t.Fatalf("failure %d: %d, want 401", i, res.Code)
		}
	}
	res := policytest.Run(p, authFrom(attacker, "admin", "one-more"))
	if res.Code != 429 || res.Reached || res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonAuthThrottled ||
		res.Header.Get("Retry-After") != strconv.Itoa(int(FailureEvery/time.Second)) {
		t.Fatalf("over budget: %d reached %v %v", res.Code, res.Reached, res.Header)
	}
	if got := rec.Got[len(rec.Got)-1]; !strings.HasSuffix(got, policy.ReasonAuthThrottled) {
		t.Fatalf("refusal counted as %q", got)
	}
	// An unknown name costs the same budget: the limit does not tell names.
	if res := policytest.Run(p, authFrom(attacker, "nobody", "x")); res.Code != 429 {
		t.Fatalf("unknown name over budget: %d", res.Code)
	}
	// The cached right password needs no check: still let in.
	if res := policytest.Run(p, authFrom(attacker, "admin", "s3cret")); res.Code != 200 {
		t.Fatalf("cached right password over budget: %d", res.Code)
	}
	if res := policytest.Run(p, authFrom("203.0.113.9:1", "admin", "guess")); res.Code != 401 {
		t.Fatalf("another address: %d, want 401", res.Code)
	}
	clk.Advance(FailureEvery)
	if res := policytest.Run(p, authFrom(attacker, "admin", "later")); res.Code != 401 {
		t.Fatalf("after %v: %d, want one more check (401)", FailureEvery, res.Code)
	}
	if res := policytest.Run(p, authFrom(attacker, "admin", "again")); res.Code != 429 {
		t.Fatalf("second after refill: %d, want 429", res.Code)
	}
}

// A right password gives its token back: a user who logs in from an
// address many times (a new cache after each rebuild, no cache hits) is
// never throttled.
func TestFailureBudgetRefundsSuccess(t *testing.T) {
	clk := &policytest.Clock{T: time.Unix(1_000_000, 0)}
	u := []string{line(t, "admin", "s3cret")}
	for i := range 3 * FailureBurst {
		p, _, _ := New(&config.BasicAuth{Users: u}, NewCache(), NewSlots(1, 0), policy.Env{Now: clk.Now})
		if res := policytest.Run(p, authFrom("198.51.100.7:1", "admin", "s3cret")); res.Code != 200 {
			t.Fatalf("login %d: %d", i, res.Code)
		}
	}
	cache := NewCache()
	p, _, _ := New(&config.BasicAuth{Users: u}, cache, NewSlots(1, 0), policy.Env{Now: clk.Now})
	for i := range 3 * FailureBurst {
		clear(cache.ok)
		if res := policytest.Run(p, authFrom("198.51.100.7:1", "admin", "s3cret")); res.Code != 200 {
			t.Fatalf("uncached login %d: %d", i, res.Code)
		}
	}
}

// countingMatcher records how many checks run at once.
type countingMatcher struct {
	inner       matcher
	now, peak   atomic.Int32
	hold        time.Duration
	checks      atomic.Int32
	peakUpdates sync.Mutex
}

func (c *countingMatcher) MatchesPassword(pass string) bool {
	n := c.now.Add(1)
	c.peakUpdates.Lock()
	c.peak.Store(max(c.peak.Load(), n))
	c.peakUpdates.Unlock()
	c.checks.Add(1)
	time.Sleep(c.hold) // fake time inside the synctest bubble: the check's cost
	c.now.Add(-1)
	return c.inner.MatchesPassword(pass)
}

// The process's slots bound the checks under way at once over every
// route; a check that cannot get a slot within the wait is refused (503
// auth-busy, Retry-After: 1) without running and without reaching the
// backend.
func TestSlotsBoundChecksAcrossRoutes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slots := NewSlots(2, time.Second)
		m := &countingMatcher{inner: bcryptHash(line(t, "", "s3cret")[1:]), hold: 300 * time.Millisecond}
		var ps []*Policy
		for range 2 { // two routes, one process, one count of the checks
			p, _, err := New(&config.BasicAuth{Users: []string{line(t, "admin", "s3cret")}}, NewCache(), slots, policy.Env{})
			if err != nil {
				t.Fatal(err)
			}
			p.users[0].check = m
			ps = append(ps, p)
		}
		// 16 clients at once on each route: 8 checks of 300ms fit in the
		// wait of 1s per pair of slots; the rest are refused.
		var wg sync.WaitGroup
		codes := make(chan int, 32)
		for i := range 32 {
			wg.Go(func() {
				peer := "198.51.100." + strconv.Itoa(i) + ":1"
				codes <- policytest.Run(ps[i%2], authFrom(peer, "admin", "wrong")).Code
			})
		}
		wg.Wait()
		close(codes)
		count := map[int]int{}
		for c := range codes {
			count[c]++
		}
		if peak := m.peak.Load(); peak != 2 {
			t.Fatalf("%d checks at once over both routes, want the 2 slots' worth", peak)
		}
		checks := int(m.checks.Load())
		if count[401] != checks || count[503] != 32-checks || checks > 8 || checks < 6 {
			t.Fatalf("answers %v after %d checks, want 401 per check (at most 8 fit) and 503 for the rest", count, checks)
		}
		// The 503's headers.
		s := NewSlots(1, time.Second)
		p, _, _ := New(&config.BasicAuth{Users: []string{line(t, "admin", "s3cret")}}, NewCache(), s, policy.Env{})
		if err := s.acquire(t.Context()); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res := policytest.Run(p, authFrom("192.0.2.1:1", "admin", "s3cret"))
		if res.Code != 503 || res.Reached || res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonAuthBusy || res.Header.Get("Retry-After") != "1" {
			t.Fatalf("no slot: %d %v", res.Code, res.Header)
		}
		if waited := time.Since(start); waited != time.Second {
			t.Fatalf("waited %v for a slot, want the documented 1s", waited)
		}
		s.release()
		if res := policytest.Run(p, authFrom("192.0.2.1:1", "admin", "s3cret")); res.Code != 200 {
			t.Fatalf("slot free again: %d", res.Code)
		}
	})
}

// costRecorder records the cost (weight) of every check it runs.
type costRecorder struct {
	mu  sync.Mutex
	got []int
}

type recordedMatcher struct {
	inner matcher
	w     int
	r     *costRecorder
}

func (m recordedMatcher) MatchesPassword(pass string) bool {
	m.r.mu.Lock()
	m.r.got = append(m.r.got, m.w)
	m.r.mu.Unlock()
	return m.inner.MatchesPassword(pass)
}

func (r *costRecorder) take() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// A wrong password costs the route's most expensive check whatever the
// name (bob's cost-10 bcrypt here): a cheaper user's failure (alice's
// cost 4, ann's apr1) is followed by a dummy check of that cost, and an
// unknown name is checked against the dummy alone; so timing does not
// tell names apart. New warns about the mixed costs (W056) and the apr1
// line of the file (W055).
func TestFailureCostsTheSameForEveryName(t *testing.T) {
	hash := func(pass string, cost int) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pass), cost)
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(file, []byte("bob:"+hash("b", 10)+"\n"+apr1Line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, notes, err := New(&config.BasicAuth{Users: []string{"alice:" + hash("a", 4)}, UsersFile: file}, NewCache(), NewSlots(1, 0), policy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(notes.Mixed, "alice bcrypt cost 4") || !strings.Contains(notes.Mixed, "bob bcrypt cost 10") || len(notes.Weak) != 1 || !strings.Contains(notes.Weak[0], `"ann"`) {
		t.Fatalf("notes %+v, want W056 naming the costs and W055 for ann", notes)
	}
	// The dummy is a well-formed hash of the costliest kind and cost: a
	// check runs the whole cost-10 bcrypt, and fails.
	d, ok := p.dummy.(bcryptHash)
	if cost, err := bcrypt.Cost(d); !ok || err != nil || cost != 10 {
		t.Fatalf("dummy %T of cost %d (%v), want bcrypt cost 10", p.dummy, cost, err)
	}
	if err := bcrypt.CompareHashAndPassword(d, []byte("wrong")); err != bcrypt.ErrMismatchedHashAndPassword {
		t.Fatalf("the dummy check: %v, want a mismatch after the whole computation", err)
	}
	rec := &costRecorder{}
	for i := range p.users {
		p.users[i].check = recordedMatcher{inner: p.users[i].check, w: weight(p.users[i].kind), r: rec}
	}
	p.dummy = recordedMatcher{inner: d, w: weight(p.costliest), r: rec}
	for i, name := range []string{"bob", "alice", "ann", "mallory"} {
		res := policytest.Run(p, authFrom("198.51.100."+strconv.Itoa(i)+":1", name, "wrong"))
		got := rec.take()
		if res.Code != 401 || len(got) == 0 || slices.Max(got) != 10 || slices.Index(got, 10) != len(got)-1 {
			t.Errorf("a wrong password for %s: %d, checks of costs %v; want one of cost 10, last", name, res.Code, got)
		}
	}
}

// A users file is read only if it is a regular file of at most
// MaxUsersFile bytes; anything else denies, at once.
func TestUsersFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("# padding\n", MaxUsersFile/10+1)+line(t, "admin", "s3cret")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"too big": big, "device": "/dev/zero", "fifo": fifo, "directory": dir} {
		t.Run(name, func(t *testing.T) {
			done := make(chan struct{})
			var p *Policy
			var err error
			go func() {
				defer close(done)
				p, _, err = New(&config.BasicAuth{UsersFile: path}, NewCache(), NewSlots(1, 0), policy.Env{})
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("reading %s did not return", path)
			}
			if err == nil {
				t.Fatalf("%s accepted", path)
			}
			if res := policytest.Run(p, authFrom("192.0.2.1:1", "admin", "s3cret")); res.Code != 403 || res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonPolicyMisconfigured {
				t.Fatalf("%s: %d, want 403 policy-misconfigured", path, res.Code)
			}
		})
	}
}
