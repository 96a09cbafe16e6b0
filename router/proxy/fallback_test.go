package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// fallbackSetup is a route "web" on backend a whose breaker (ratio,
// cooldown 10s) falls back to route "maint" on backend m.
func fallbackSetup(t *testing.T, status int) (*harness, *testBackend, *testBackend) {
	t.Helper()
	h := newHarness(t, Options{EjectAfter: -1})
	a, m := newBackend(t, "a"), newBackend(t, "m")
	web := withBreaker(ep("web", a.backend()), ratioParams())
	web.CircuitBreaker.Fallback = config.Fallback{Route: "maint", Status: status}
	h.set(config.SourceDocker, web, ep("maint", m.backend()))
	return h, a, m
}

func fallbackCount(t *testing.T, h *harness, route, fallback, kind string) float64 {
	t.Helper()
	return metricValue(t, h, "levee_fallback_requests_total", map[string]string{"route": route, "fallback": fallback, "kind": kind})
}

// expectFallback asserts an answer of the maint backend on web's behalf.
func expectFallback(t *testing.T, h *harness, status int, retryAfter string) {
	t.Helper()
	code, body, resp := h.get("web.test", "/page")
	if code != status || body != "ok from m" {
		t.Fatalf("got %d %q, want %d from the fallback", code, body, status)
	}
	if got := resp.Header.Get(HeaderFallback); got != "web" {
		t.Errorf("%s = %q, want web", HeaderFallback, got)
	}
	if got := resp.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After = %q, want %q", got, retryAfter)
	}
	if d := resp.Header.Get(HeaderDiagnostic); d != "" {
		t.Errorf("a fallback's answer is the fallback's, not Levee's: %s %q", HeaderDiagnostic, d)
	}
}

func TestFallbackAnswersWhileOpenThenRecovers(t *testing.T) {
	h, a, m := fallbackSetup(t, http.StatusServiceUnavailable)
	tripped(t, h, "web", "web.test")
	hitsA := a.hits.Load()
	for i := 0; i < 3; i++ {
		expectFallback(t, h, http.StatusServiceUnavailable, "10")
	}
	if a.hits.Load() != hitsA {
		t.Fatalf("the original backend saw requests while open")
	}
	if m.hits.Load() != 3 {
		t.Fatalf("the fallback saw %d requests, want 3", m.hits.Load())
	}
	if got := m.last().Header.Get(HeaderFallback); got != "web" {
		t.Fatalf("request to the fallback: %s = %q, want web", HeaderFallback, got)
	}
	if m.last().URL.Path != "/page" {
		t.Fatalf("fallback got path %q", m.last().URL.Path)
	}
	if n := fallbackCount(t, h, "web", "maint", fallbackKindRoute); n != 3 {
		t.Fatalf("levee_fallback_requests_total{kind=route} = %v, want 3", n)
	}
	st, _ := h.r.Breaker("web")
	if st.Rejected != 3 || st.Failures != 4 || st.OpenTraffic != "fallback" || st.Fallback != "maint" {
		t.Fatalf("web's breaker %+v: the fallback's answers must not count there", st)
	}
	// Cooldown over: the probe goes to the original backend, which has
	// recovered, and the route closes and is served by it again.
	h.clock.Advance(10 * time.Second)
	if code, body, resp := h.get("web.test", "/"); code != 200 || body != "ok from a" || resp.Header.Get(HeaderFallback) != "" {
		t.Fatalf("probe: %d %q %v, want a's answer", code, body, resp.Header)
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("state %s after a good probe", s)
	}
	if code, body, _ := h.get("web.test", "/"); code != 200 || body != "ok from a" || m.hits.Load() != 3 {
		t.Fatalf("after recovery: %d %q (fallback hits %d)", code, body, m.hits.Load())
	}
}

func TestFallbackKeepsItsOwnStatusWithoutFallbackStatus(t *testing.T) {
	h, _, _ := fallbackSetup(t, 0)
	tripped(t, h, "web", "web.test")
	expectFallback(t, h, http.StatusOK, "10")
}

func TestFallbackHalfOpenProbeGoesToTheOriginal(t *testing.T) {
	h, a, m := fallbackSetup(t, http.StatusServiceUnavailable)
	tripped(t, h, "web", "web.test")
	h.clock.Advance(10 * time.Second)
	probe := make(chan int, 1)
	go func() {
		resp := h.do(http.MethodGet, "web.test", "/hang", nil)
		resp.Body.Close()
		probe <- resp.StatusCode
	}()
	waitArrived(t, a)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Go(func() { expectFallback(t, h, http.StatusServiceUnavailable, "1") })
	}
	wg.Wait()
	if m.hits.Load() != 4 {
		t.Fatalf("requests beyond the probe slot: fallback saw %d, want 4", m.hits.Load())
	}
	a.unhang()
	if code := <-probe; code != 200 {
		t.Fatalf("probe %d", code)
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("state %s", s)
	}
}

// The fallback's failures go to its own breaker and are not retried on
// the original; once its own breaker is open the route answers as
// without a fallback: no chain.
func TestFallbackFailuresStayWithTheFallback(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	a, m := newBackend(t, "a"), newBackend(t, "m")
	m.mode.Store(modeFail)
	web := withBreaker(ep("web", a.backend()), ratioParams())
	web.Retry.Attempts = 3
	web.CircuitBreaker.Fallback = config.Fallback{Route: "maint", Status: 503}
	maint := withBreaker(ep("maint", m.backend()), breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 30 * time.Second})
	maint.CircuitBreaker.Fallback.Route = "other" // never followed (I084)
	other := newBackend(t, "o")
	h.set(config.SourceDocker, web, maint, ep("other", other.backend()))
	for breakerState(t, h, "web") != "open" { // retries: fewer requests than tripped's
		h.get("web.test", "/fail")
	}
	if m.hits.Load() != 0 {
		t.Fatalf("the fallback was used before the breaker opened")
	}
	hitsA := a.hits.Load()
	before, _ := h.r.Breaker("web")
	for i := 0; i < 2; i++ {
		// fallbackStatus applies to the fallback's failures too: the
		// client sees 503, whatever broke.
		if code, body, _ := h.get("web.test", "/"); code != 503 || body != "fail from m" {
			t.Fatalf("fallback failing: %d %q", code, body)
		}
	}
	if a.hits.Load() != hitsA {
		t.Fatalf("a fallback's failure was retried on the original")
	}
	after, _ := h.r.Breaker("web")
	if after.Failures != before.Failures || after.Admitted != before.Admitted {
		t.Fatalf("web's breaker heard of the fallback's outcomes: %+v → %+v", before, after)
	}
	if s := breakerState(t, h, "maint"); s != "open" {
		t.Fatalf("maint's own breaker %s, want open", s)
	}
	// The fallback is open too: web's own open answer, no further chain.
	expectOpen(t, h, "web.test", "10")
	if other.hits.Load() != 0 {
		t.Fatalf("the fallback's fallback was followed")
	}
	if n := fallbackCount(t, h, "web", "maint", fallbackKindUnavailable); n != 1 {
		t.Fatalf("kind=unavailable %v, want 1", n)
	}
}

func TestFallbackHeaderFromClientsIsRemoved(t *testing.T) {
	h, a, _ := fallbackSetup(t, 0)
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
	req.Host = "web.test"
	req.Header.Set(HeaderFallback, "spoofed")
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := a.last().Header.Values(HeaderFallback); len(got) != 0 {
		t.Fatalf("a client's %s reached the backend: %q", HeaderFallback, got)
	}
}

// scope=backend: only when every backend's breaker refuses does the
// route fall back; a request body read for the original attempt reaches
// the fallback whole.
func TestFallbackScopeBackendAndBody(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	a, b, m := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "m")
	bodies := make(chan string, 4)
	maintSrv := newBodyEcho(t, bodies)
	web := withBreaker(ep("web", a.backend(), b.backend()), breaker.Params{MinRequests: 100, ConsecutiveFailures: 1, Cooldown: 10 * time.Second})
	web.CircuitBreaker.Scope = config.ScopeBackend
	web.CircuitBreaker.Fallback.Route = "maint"
	web.Retry.Attempts = 2
	_ = m
	h.set(config.SourceDocker, web, ep("maint", maintSrv))
	a.mode.Store(modeFail)
	h.get("web.test", "/") // a fails, retried on b
	if code, body, _ := h.get("web.test", "/"); code != 200 || body != "ok from b" {
		t.Fatalf("with one backend open: %d %q, want b", code, body)
	}
	b.mode.Store(modeFail)
	h.get("web.test", "/")
	resp := h.do(http.MethodPost, "web.test", "/form", strings.NewReader("field=value"))
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != "echo field=value" || resp.Header.Get(HeaderFallback) != "web" {
		t.Fatalf("every backend open: %d %q %v", resp.StatusCode, got, resp.Header)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Fatalf("no Retry-After on the fallback's answer")
	}
}

// newBodyEcho is a backend that answers "echo <body>" and sends each body
// it got to bodies.
func newBodyEcho(t *testing.T, bodies chan<- string) config.Backend {
	t.Helper()
	b := newBackend(t, "echo")
	b.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		select {
		case bodies <- string(data):
		default:
		}
		io.WriteString(w, "echo "+string(data))
	})
	return b.backend()
}

// A fallback route that cannot answer (no backend) gives Levee's own
// answer, still marked as the fallback's.
func TestFallbackWithoutBackendsIsMarked(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	a := newBackend(t, "a")
	web := withBreaker(ep("web", a.backend()), ratioParams())
	web.CircuitBreaker.Fallback.Route = "maint"
	h.set(config.SourceDocker, web, ep("maint"))
	tripped(t, h, "web", "web.test")
	code, _, resp := h.get("web.test", "/")
	if code != 503 || resp.Header.Get(HeaderDiagnostic) != DiagnosticNoHealthyBackend || resp.Header.Get(HeaderFallback) != "web" || resp.Header.Get("Retry-After") != "10" {
		t.Fatalf("got %d %v", code, resp.Header)
	}
}

// Every refused fallback config answers as without a fallback.
func TestBadFallbackConfigKeepsTheOpenAnswer(t *testing.T) {
	for _, name := range []string{"nope", "web", "loop"} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{EjectAfter: -1})
			a, l := newBackend(t, "a"), newBackend(t, "l")
			web := withBreaker(ep("web", a.backend()), ratioParams())
			web.CircuitBreaker.Fallback.Route = name
			loop := withBreaker(ep("loop", l.backend()), ratioParams())
			loop.CircuitBreaker.Fallback.Route = "web"
			h.set(config.SourceDocker, web, loop)
			tripped(t, h, "web", "web.test")
			expectOpen(t, h, "web.test", "10")
			if l.hits.Load() != 0 {
				t.Fatalf("a refused fallback got traffic")
			}
		})
	}
}

// The request stays the original route's in its metrics and access log
// line, which names who answered.
func TestFallbackAccessLogAndRouteMetrics(t *testing.T) {
	h := newHarness(t, Options{AccessLog: true, EjectAfter: -1})
	a, m := newBackend(t, "a"), newBackend(t, "m")
	web := withBreaker(ep("web", a.backend()), ratioParams())
	web.CircuitBreaker.Fallback = config.Fallback{Route: "maint", Status: 503}
	h.set(config.SourceDocker, web, ep("maint", m.backend()))
	tripped(t, h, "web", "web.test")
	h.get("web.test", "/x")
	var last map[string]any
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	for sc.Scan() {
		var l map[string]any
		if json.Unmarshal(sc.Bytes(), &l) == nil && l["event"] == "access" {
			last = l
		}
	}
	for k, want := range map[string]any{"route": "web", "fallback": "maint", "status": 503.0, "breaker": "open", "backend": "127.0.0.1:" + portOf(m)} {
		if last[k] != want {
			t.Errorf("access field %s = %v, want %v (%v)", k, last[k], want, last)
		}
	}
	if n := metricValue(t, h, "levee_requests_total", map[string]string{"route": "web", "code": "503"}); n != 1 {
		t.Errorf("web's 503s: %v", n)
	}
	if n := metricValue(t, h, "levee_requests_total", map[string]string{"route": "maint"}); n != 0 {
		t.Errorf("the fallback's request counted under maint: %v", n)
	}
}
