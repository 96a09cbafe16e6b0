package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// A request a policy refuses never reaches the breaker, the balancer or a
// backend, and is no backend failure: with a breaker that counts the
// refusal statuses as failures and opens on the first one, and passive
// ejection on the first failure, refusals leave the breaker closed with
// an empty window and the backend in rotation. The refusals are counted
// and logged with their diagnostic.
func TestRefusalsNeverReachBreakerOrBackend(t *testing.T) {
	h := newHarness(t, Options{AccessLog: true})
	b := newBackend(t, "b1")
	fails, err := breaker.ParseStatuses("401,403,429,500-599")
	if err != nil {
		t.Fatal(err)
	}
	e := withBreaker(ep("guarded", b.backend()), breaker.Params{Threshold: 1, MinRequests: 1, ConsecutiveFailures: 1, Cooldown: time.Minute, FailureStatuses: fails})
	e.PassiveHealth = config.PassiveHealth{ConsecutiveFailures: 1, EjectTime: time.Minute, MaxEjectTime: time.Minute, MaxEjectedShare: 1}
	// The test client is 127.0.0.1: the allow-list lets it in, the rate
	// limit allows one request an hour.
	e.Access.IPAllowList = &config.IPAllowList{SourceRange: []string{"127.0.0.0/8"}}
	e.Access.RateLimit = &config.RateLimit{Average: 1, Period: time.Hour, Burst: 1, SourceCriterion: config.CriterionIP}
	denied := withBreaker(ep("denied", b.backend()), breaker.Params{Threshold: 1, MinRequests: 1, ConsecutiveFailures: 1, Cooldown: time.Minute, FailureStatuses: fails})
	denied.Access.IPAllowList = &config.IPAllowList{SourceRange: []string{"192.0.2.0/24"}}
	h.set("docker", e, denied)

	if code, _, _ := h.get("guarded.test", "/"); code != 200 {
		t.Fatalf("first request: %d", code)
	}
	for range 5 {
		code, _, resp := h.get("guarded.test", "/")
		if code != http.StatusTooManyRequests || resp.Header.Get(HeaderDiagnostic) != policy.ReasonRateLimited || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("rate-limited request: %d %v", code, resp.Header)
		}
		code, _, resp = h.get("denied.test", "/")
		if code != http.StatusForbidden || resp.Header.Get(HeaderDiagnostic) != policy.ReasonForbiddenIP {
			t.Fatalf("denied request: %d %v", code, resp.Header)
		}
	}
	if got := b.hits.Load(); got != 1 {
		t.Fatalf("backend saw %d requests, want 1", got)
	}
	for _, id := range []string{"guarded", "denied"} {
		st := routeGuard(t, h, id).Breaker().Stats()
		want := map[string]int{"guarded": 1, "denied": 0}[id]
		if st.State != breaker.Closed || st.WindowTotal != want || st.WindowFailures != 0 {
			t.Fatalf("%s breaker: %+v", id, st)
		}
		rt, _ := h.r.Snapshot().Route(id)
		for _, be := range rt.Backends() {
			if be.State().Ejected(h.clock.Now().UnixNano()) || be.State().Ejection().Failures.Load() != 0 {
				t.Fatalf("%s: backend judged by a refusal", id)
			}
		}
	}
	if v := metricValue(t, h, "levee_policy_refusals_total", map[string]string{"route": "guarded", "policy": "rate-limit", "reason": "rate-limited"}); v != 5 {
		t.Fatalf("rate-limit refusals %v, want 5", v)
	}
	if v := metricValue(t, h, "levee_policy_refusals_total", map[string]string{"route": "denied", "policy": "ip-allow-list", "reason": "forbidden-ip"}); v != 5 {
		t.Fatalf("allow-list refusals %v, want 5", v)
	}
	if v := metricValue(t, h, "levee_requests_total", map[string]string{"route": "denied", "code": "403"}); v != 5 {
		t.Fatalf("requests_total{403} %v, want 5", v)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"diagnostic":"forbidden-ip"`) || !strings.Contains(logs, `"status":429`) {
		t.Fatalf("access log lacks the refusals:\n%s", logs)
	}
}

// Rate-limit buckets outlive a config change (a new snapshot), also a
// change of another route: an unrelated container starting does not
// refill anyone's bucket.
func TestPolicyStateOutlivesRebuild(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "b1")
	e := ep("limited", b.backend())
	e.Access.RateLimit = &config.RateLimit{Average: 1, Period: time.Hour, Burst: 1, SourceCriterion: config.CriterionIP}
	h.set("docker", e)
	if code, _, _ := h.get("limited.test", "/"); code != 200 {
		t.Fatalf("first: %d", code)
	}
	h.set("docker", e, ep("other", b.backend()))
	if code, _, _ := h.get("limited.test", "/"); code != http.StatusTooManyRequests {
		t.Fatalf("after an unrelated rebuild: %d, want 429", code)
	}
	// Removing the policy drops its state; adding it back starts afresh.
	e.Access.RateLimit = nil
	h.set("docker", e)
	e.Access.RateLimit = &config.RateLimit{Average: 1, Period: time.Hour, Burst: 1, SourceCriterion: config.CriterionIP}
	h.set("docker", e)
	if code, _, _ := h.get("limited.test", "/"); code != 200 {
		t.Fatalf("after the policy came back: %d", code)
	}
}

// Refusal series go with the route's state.
func TestRefusalSeriesGoWithTheRoute(t *testing.T) {
	h := newHarnessWith(t, router.Options{RemovedRouteGrace: time.Minute}, Options{})
	b := newBackend(t, "b1")
	e := ep("fenced", b.backend())
	e.Access.IPAllowList = &config.IPAllowList{SourceRange: []string{"192.0.2.0/24"}}
	h.set(config.SourceDocker, e)
	h.get("fenced.test", "/")
	if !seriesExist(t, h, "levee_policy_refusals_total", "fenced") {
		t.Fatal("no refusal series after a refusal")
	}
	h.set(config.SourceDocker)
	h.clock.Advance(2 * time.Minute)
	h.set(config.SourceDocker) // sweeps
	if seriesExist(t, h, "levee_policy_refusals_total", "fenced") {
		t.Fatal("refusal series kept after the route state was dropped")
	}
}

// A misconfigured security policy denies; the router says why.
func TestMisconfiguredPolicyDenies(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "b1")
	e := ep("locked", b.backend())
	e.Access.BasicAuth = &config.BasicAuth{Users: []string{"admin:$1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"}, Realm: "x"}
	e.Access.RateLimit = &config.RateLimit{Average: 0, Period: time.Second, Burst: 1} // no average: off, reported
	h.set("docker", e)
	code, _, resp := h.get("locked.test", "/")
	if code != http.StatusForbidden || resp.Header.Get(HeaderDiagnostic) != policy.ReasonPolicyMisconfigured || b.hits.Load() != 0 {
		t.Fatalf("%d %v, backend hits %d", code, resp.Header, b.hits.Load())
	}
	var found bool
	for _, d := range h.r.Diagnostics() {
		if d.Source.ObjectID == "locked" && d.Key == "rateLimit.average" {
			found = true
		}
	}
	if !found {
		t.Fatalf("no router diagnostic for the rate limit without average: %v", h.r.Diagnostics())
	}
	rt, _ := h.r.Snapshot().Route("locked")
	if names := policyNames(rt); strings.Join(names, ",") != "basic-auth" {
		t.Fatalf("chain %v", names)
	}
}

func policyNames(rt *router.Route) []string {
	var out []string
	for _, p := range rt.Policies().Policies() {
		out = append(out, p.Name())
	}
	return out
}

// BenchmarkServeHTTPPolicies is BenchmarkServeHTTP's no-breaker case with
// an allow-list and a rate limit that admit every request: the chain's
// own cost.
func BenchmarkServeHTTPPolicies(b *testing.B) {
	r := benchRouterWith(b, func(e *config.Entrypoint) {
		e.Access.IPAllowList = &config.IPAllowList{SourceRange: []string{"192.0.2.0/24"}}
		e.Access.RateLimit = &config.RateLimit{Average: 1_000_000_000, Period: time.Second, Burst: 1_000_000_000, SourceCriterion: config.CriterionIP}
	})
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "http://bench.test/path?q=1", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		clear(w.h)
		r.ServeHTTP(w, req)
	}
}

// benchRouterWith is benchRouter (no breaker) with the route changed by
// edit.
func benchRouterWith(b *testing.B, edit func(e *config.Entrypoint)) *Handler {
	r := router.New(router.Options{Logger: zerolog.Nop()})
	b.Cleanup(r.Close)
	p := New(r, Options{Logger: zerolog.Nop()})
	b.Cleanup(p.Close)
	e := ep("bench", benchBackend(b))
	edit(&e)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{e}})
	return p
}

// An access policy Levee could not read (an unknown key, Access.Unread)
// denies every request, even where the rest of the policy would admit it,
// and the refusal is counted as the deny policy's.
func TestUnreadAccessKeyDenies(t *testing.T) {
	h := newHarness(t, Options{})
	b := newBackend(t, "b1")
	e := ep("unread", b.backend())
	e.Access.IPAllowList = &config.IPAllowList{SourceRange: []string{"0.0.0.0/0", "::/0"}} // admits everyone
	e.Access.Unread = []string{"levee.http.unread.ipAllowList.sourcerang"}
	h.set("docker", e)
	code, _, resp := h.get("unread.test", "/")
	if code != http.StatusForbidden || resp.Header.Get(HeaderDiagnostic) != policy.ReasonPolicyMisconfigured || b.hits.Load() != 0 {
		t.Fatalf("%d %v, backend hits %d", code, resp.Header, b.hits.Load())
	}
	e.Access.Unread = nil
	h.set("docker", e)
	if code, _, _ := h.get("unread.test", "/"); code != http.StatusOK || b.hits.Load() != 1 {
		t.Fatalf("fixed: %d, backend hits %d", code, b.hits.Load())
	}
}
