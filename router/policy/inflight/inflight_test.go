package inflight

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

func TestInFlightLimit(t *testing.T) {
	rec := &policytest.Recorder{}
	counters := NewCounters(0)
	p := New(&config.InFlight{Amount: 2, SourceCriterion: config.CriterionIP}, counters, policy.Env{Route: "r", Rec: rec})

	// Two requests of one client held inside next.
	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	done := make(chan int, 2)
	for range 2 {
		go func() {
			w := httptest.NewRecorder()
			p.Serve(w, policytest.Request("192.0.2.1:1"), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				entered <- struct{}{}
				<-release
			}))
			done <- w.Code
		}()
	}
	<-entered
	<-entered

	res := policytest.Run(p, policytest.Request("192.0.2.1:2"))
	if res.Code != http.StatusTooManyRequests || res.Reached || res.Header.Get("Retry-After") != "1" ||
		res.Header.Get(policy.HeaderDiagnostic) != policy.ReasonTooManyInFlight {
		t.Fatalf("third request: %d reached=%v %v", res.Code, res.Reached, res.Header)
	}
	if other := policytest.Run(p, policytest.Request("192.0.2.2:1")); other.Code != 200 {
		t.Fatalf("another client: %d", other.Code)
	}
	close(release)
	<-done
	<-done
	if res := policytest.Run(p, policytest.Request("192.0.2.1:3")); res.Code != 200 {
		t.Fatalf("after release: %d", res.Code)
	}
	if rec.Count() != 1 || rec.Got[0] != Name+"/"+policy.ReasonTooManyInFlight {
		t.Fatalf("counted %v", rec.Got)
	}
	// The counters are back at zero; a recompiled policy shares them.
	p2 := New(&config.InFlight{Amount: 1, SourceCriterion: config.CriterionIP}, counters, policy.Env{})
	if res := policytest.Run(p2, policytest.Request("192.0.2.1:3")); res.Code != 200 {
		t.Fatalf("counter leaked: %d", res.Code)
	}
}

func TestInFlightHeaderCriterion(t *testing.T) {
	p := New(&config.InFlight{Amount: 1, SourceCriterion: "header:X-Tenant"}, NewCounters(0), policy.Env{})
	block := make(chan struct{})
	in := make(chan struct{})
	go func() {
		r := policytest.Request("192.0.2.1:1")
		r.Header.Set("X-Tenant", "a")
		p.Serve(httptest.NewRecorder(), r, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(in); <-block }))
	}()
	<-in
	defer close(block)
	r := policytest.Request("192.0.2.9:1")
	r.Header.Set("X-Tenant", "a")
	if got := policytest.Run(p, r).Code; got != 429 {
		t.Fatalf("same tenant from another address: %d", got)
	}
	r.Header.Set("X-Tenant", "b")
	if got := policytest.Run(p, r).Code; got != 200 {
		t.Fatalf("other tenant: %d", got)
	}
}

func BenchmarkInFlight(b *testing.B) {
	p := New(&config.InFlight{Amount: 100}, NewCounters(0), policy.Env{})
	r := policytest.Request("192.0.2.1:1")
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(nil, r, next)
	}
}
