package proxy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// withBreaker adds a circuit breaker with params p to e.
func withBreaker(e config.Entrypoint, p breaker.Params) config.Entrypoint {
	cb := config.DefaultCircuitBreaker()
	cb.Params = p
	e.CircuitBreaker = &cb
	return e
}

func ratioParams() breaker.Params {
	return breaker.Params{Threshold: 0.5, MinRequests: 4, Cooldown: 10 * time.Second}
}

// expectOpen asserts a circuit-open answer with the given Retry-After.
func expectOpen(t *testing.T, h *harness, host, retryAfter string) {
	t.Helper()
	code, body, resp := h.get(host, "/")
	if code != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticCircuitOpen {
		t.Fatalf("got %d %q %q, want 503 circuit-open", code, resp.Header.Get(HeaderDiagnostic), body)
	}
	if body != config.DefaultResponseBody {
		t.Errorf("body %q, want %q", body, config.DefaultResponseBody)
	}
	if got := resp.Header.Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After = %q, want %q", got, retryAfter)
	}
}

func breakerState(t *testing.T, h *harness, route string) string {
	t.Helper()
	st, ok := h.r.Breaker(route)
	if !ok {
		t.Fatalf("route %q has no breaker", route)
	}
	return st.State
}

func TestBreakerTripsByRatioAndKeepsTrafficOffBackends(t *testing.T) {
	h := newHarness(t, Options{})
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.mode.Store(modeFail)
	b.mode.Store(modeFail)
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend(), b.backend()), ratioParams()))
	for i := 0; i < 4; i++ {
		if code, body, _ := h.get("web.test", "/"); code != 500 || !strings.HasPrefix(body, "fail from") {
			t.Fatalf("request %d: %d %q, want the backend's 500", i, code, body)
		}
	}
	if s := breakerState(t, h, "web"); s != "open" {
		t.Fatalf("state %s after 4/4 failures, want open", s)
	}
	for i := 0; i < 5; i++ {
		expectOpen(t, h, "web.test", "10")
	}
	if hits := a.hits.Load() + b.hits.Load(); hits != 4 {
		t.Fatalf("backends saw %d requests, want 4: an open breaker must keep traffic off", hits)
	}
}

func TestBreakerTripsByConsecutiveFailures(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	p := breaker.Params{MinRequests: 100, ConsecutiveFailures: 3, Cooldown: 5 * time.Second}
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), p))
	h.get("web.test", "/fail")
	h.get("web.test", "/fail")
	h.get("web.test", "/") // a success resets the streak
	h.get("web.test", "/fail")
	h.get("web.test", "/fail")
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("state %s after a broken streak, want closed", s)
	}
	h.get("web.test", "/fail")
	st, _ := h.r.Breaker("web")
	if st.State != "open" || st.LastTransition == nil || st.LastTransition.Rule != "consecutive_failures" {
		t.Fatalf("breaker %+v, want open by consecutive_failures", st)
	}
	expectOpen(t, h, "web.test", "5")
}

func TestBreakerRetryAfterCountsDownToHalfOpen(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	for i := 0; i < 4; i++ {
		h.get("web.test", "/fail")
	}
	expectOpen(t, h, "web.test", "10")
	h.clock.Advance(3500 * time.Millisecond)
	expectOpen(t, h, "web.test", "7") // 6.5 s left, rounded up
	h.clock.Advance(6 * time.Second)
	expectOpen(t, h, "web.test", "1") // never 0
	h.clock.Advance(time.Second)
	if code, _, _ := h.get("web.test", "/"); code != 200 {
		t.Fatalf("probe after the cooldown: %d, want 200", code)
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("state %s after a good probe, want closed", s)
	}
}

func tripped(t *testing.T, h *harness, route, host string) {
	t.Helper()
	for i := 0; i < 4; i++ {
		h.get(host, "/fail")
	}
	if s := breakerState(t, h, route); s != "open" {
		t.Fatalf("state %s, want open", s)
	}
}

func TestBreakerHalfOpenAdmitsOneProbeAndRejectsTheRest(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	tripped(t, h, "web", "web.test")
	h.clock.Advance(10 * time.Second)

	probe := make(chan int, 1)
	go func() {
		resp := h.do(http.MethodGet, "web.test", "/hang", nil)
		resp.Body.Close()
		probe <- resp.StatusCode
	}()
	waitArrived(t, a)
	before := a.hits.Load()
	var wg sync.WaitGroup
	for i := 0; i < 5; i++ {
		wg.Go(func() { expectOpen(t, h, "web.test", "1") })
	}
	wg.Wait()
	if a.hits.Load() != before {
		t.Fatalf("requests beyond the probe reached the backend")
	}
	a.unhang()
	if code := <-probe; code != 200 {
		t.Fatalf("probe: %d", code)
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("state %s after the probe succeeded, want closed", s)
	}
}

func TestBreakerProbeTimeoutFreesTheSlot(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	p := ratioParams()
	p.ProbeTimeout = 3 * time.Second
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), p))
	tripped(t, h, "web", "web.test")
	h.clock.Advance(10 * time.Second)

	done := make(chan struct{}, 2)
	hang := func() {
		resp := h.do(http.MethodGet, "web.test", "/hang", nil)
		resp.Body.Close()
		done <- struct{}{}
	}
	go hang()
	waitArrived(t, a) // the probe hangs
	expectOpen(t, h, "web.test", "1")
	h.clock.Advance(3*time.Second + time.Millisecond)
	go hang()
	waitArrived(t, a) // the slot was freed: a new probe got through
	a.unhang()
	<-done
	<-done
}

func TestBreakerLateSuccessFromBeforeTheTripDoesNotClose(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	late := make(chan int, 1)
	go func() {
		resp := h.do(http.MethodGet, "web.test", "/hang", nil)
		resp.Body.Close()
		late <- resp.StatusCode
	}()
	waitArrived(t, a)
	tripped(t, h, "web", "web.test")
	a.unhang()
	if code := <-late; code != 200 {
		t.Fatalf("late request: %d", code)
	}
	if s := breakerState(t, h, "web"); s != "open" {
		t.Fatalf("a success admitted before the trip changed the state to %s", s)
	}
	expectOpen(t, h, "web.test", "10")
}

func TestBreaker4xxDoesNotTrip(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	a.mode.Store(modeFail)
	a.failStatus.Store(http.StatusNotFound)
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	for i := 0; i < 20; i++ {
		if code, _, _ := h.get("web.test", "/"); code != 404 {
			t.Fatalf("got %d, want the backend's 404", code)
		}
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("4xx tripped the breaker: %s", s)
	}
}

func TestBreakerTransportErrorsAndTimeoutsAreFailures(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	a := newBackend(t, "a")
	a.mode.Store(modeHang)
	closer := rawBackend(t, func(c net.Conn) { // answers something that is not HTTP
		if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
			_, _ = io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n")
		}
	})
	closer.Weight = config.DefaultWeight
	e := withBreaker(ep("web", a.backend(), closer), ratioParams())
	e.BackendTimeout = 50 * time.Millisecond
	h.set(config.SourceDocker, e)
	codes := map[int]int{}
	for i := 0; i < 4; i++ {
		code, _, _ := h.get("web.test", "/")
		codes[code]++
	}
	if codes[502] != 2 || codes[504] != 2 {
		t.Fatalf("codes %v, want two 502 and two 504", codes)
	}
	if s := breakerState(t, h, "web"); s != "open" {
		t.Fatalf("state %s, want open", s)
	}
}

func TestRetriesMoveToAnotherBackend(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(modeFail)
	e := ep("web", bad.backend(), good.backend())
	e.Retry.Attempts = 2
	h.set(config.SourceDocker, e)
	for i := 0; i < 6; i++ {
		if code, body, _ := h.get("web.test", "/"); code != 200 || body != "ok from good" {
			t.Fatalf("request %d: %d %q, want a retry on the good backend", i, code, body)
		}
	}
	if bad.hits.Load() == 0 {
		t.Fatal("the failing backend was never tried")
	}
	if got := metricValue(t, h, "levee_retries_total", map[string]string{"route": "web"}); got != float64(bad.hits.Load()) {
		t.Fatalf("levee_retries_total = %v, want %d", got, bad.hits.Load())
	}
}

func TestRetriesNotDoneForPOSTOnceSent(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(modeFail)
	e := ep("web", bad.backend(), good.backend())
	e.Retry.Attempts = 3
	h.set(config.SourceDocker, e)
	fails := 0
	for i := 0; i < 6; i++ {
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("payload"))
		resp.Body.Close()
		if resp.StatusCode == 500 {
			fails++
		}
	}
	if fails == 0 || int64(fails) != bad.hits.Load() {
		t.Fatalf("%d POSTs failed, bad backend saw %d: a sent POST must not be retried", fails, bad.hits.Load())
	}
}

func TestRetriesRefusedConnectionWhateverTheMethod(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	good := newBackend(t, "good")
	e := ep("web", deadBackend(t), good.backend())
	e.Retry.Attempts = 2
	h.set(config.SourceDocker, e)
	for i := 0; i < 4; i++ {
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("payload"))
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %d: %d, want a retry after the refused connection", i, resp.StatusCode)
		}
	}
	if r := good.last(); r == nil || r.Method != http.MethodPost {
		t.Fatal("the good backend did not get the POST")
	}
}

func TestRetryBudgetCapsRetries(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1, RetryBudgetMin: 2, RetryBudget: 0.1})
	bad := newBackend(t, "bad")
	bad.mode.Store(modeFail)
	e := ep("web", bad.backend())
	e.Retry.Attempts = 5
	h.set(config.SourceDocker, e)
	for i := 0; i < 5; i++ {
		h.get("web.test", "/")
	}
	// 5 requests, floor 2 retries per window (10% of 5 is less).
	if hits := bad.hits.Load(); hits != 7 {
		t.Fatalf("backend saw %d attempts, want 5 + a budget of 2 retries", hits)
	}
}

func TestBreakerScopeBackend(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.mode.Store(modeFail)
	e := ep("web", a.backend(), b.backend())
	e = withBreaker(e, breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 10 * time.Second})
	e.CircuitBreaker.Scope = config.ScopeBackend
	h.set(config.SourceDocker, e)
	for i := 0; i < 4; i++ { // round robin: a, b, a, b
		h.get("web.test", "/")
	}
	if a.hits.Load() != 2 {
		t.Fatalf("a saw %d", a.hits.Load())
	}
	for i := 0; i < 6; i++ {
		if code, body, _ := h.get("web.test", "/"); code != 200 || body != "ok from b" {
			t.Fatalf("with a's breaker open: %d %q", code, body)
		}
	}
	if a.hits.Load() != 2 {
		t.Fatalf("a's breaker is open but it saw %d requests", a.hits.Load())
	}
	states := map[string]string{}
	for _, st := range h.r.Breakers() {
		states[st.Backend] = st.State
	}
	if states[a.backend().Address+":"+portOf(a)] != "open" || states[b.backend().Address+":"+portOf(b)] != "closed" {
		t.Fatalf("backend breakers %v", states)
	}
	// b fails too: every backend open answers as an open route, with the
	// smallest Retry-After.
	b.mode.Store(modeFail)
	h.clock.Advance(4 * time.Second)
	h.get("web.test", "/")
	h.get("web.test", "/")
	expectOpen(t, h, "web.test", "6")
}

func portOf(b *testBackend) string {
	return strings.TrimPrefix(b.srv.URL[strings.LastIndexByte(b.srv.URL, ':'):], ":")
}

func TestWeightedBalancingThroughTheProxy(t *testing.T) {
	h := newHarness(t, Options{})
	a, b, z := newBackend(t, "a"), newBackend(t, "b"), newBackend(t, "zero")
	ba, bb, bz := a.backend(), b.backend(), z.backend()
	ba.Weight, bb.Weight, bz.Weight = 3, 1, 0
	h.set(config.SourceDocker, ep("web", ba, bb, bz))
	for i := 0; i < 40; i++ {
		h.get("web.test", "/")
	}
	if a.hits.Load() != 30 || b.hits.Load() != 10 || z.hits.Load() != 0 {
		t.Fatalf("hits a=%d b=%d zero=%d, want 30/10/0", a.hits.Load(), b.hits.Load(), z.hits.Load())
	}
}

func TestActiveHealthRemovesAndRestores(t *testing.T) {
	h := newHarness(t, Options{})
	a, b := newBackend(t, "a"), newBackend(t, "b")
	e := ep("web", a.backend(), b.backend())
	hc := config.DefaultHealthCheck()
	hc.Path, hc.Interval, hc.Timeout, hc.Rise, hc.Fall = "/health", 20*time.Millisecond, time.Second, 2, 2
	e.HealthCheck = &hc
	h.set(config.SourceDocker, e)
	up := func(i int) bool {
		es, _ := h.r.Entrypoint("web")
		return es.Backends[i].Up
	}
	a.healthy.Store(false)
	eventually(t, "a marked down", func() bool { return !up(0) })
	before := a.hits.Load()
	for i := 0; i < 10; i++ {
		if _, body, _ := h.get("web.test", "/"); body != "ok from b" {
			t.Fatalf("down backend served: %q", body)
		}
	}
	if a.hits.Load() != before {
		t.Fatal("a got traffic while down")
	}
	if v := metricValue(t, h, "levee_backend_up", map[string]string{"route": "web", "backend": "127.0.0.1:" + portOf(a)}); v != 0 {
		t.Fatalf("levee_backend_up for a = %v, want 0", v)
	}
	a.healthy.Store(true)
	eventually(t, "a back up", func() bool { return up(0) })
	for i := 0; i < 10; i++ {
		h.get("web.test", "/")
	}
	if a.hits.Load() == before {
		t.Fatal("a got no traffic after recovering")
	}
}

func TestHealthFailsOpenWhenEveryBackendIsDown(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	a.healthy.Store(false)
	e := ep("web", a.backend())
	hc := config.DefaultHealthCheck()
	hc.Path, hc.Interval, hc.Rise, hc.Fall = "/health", 20*time.Millisecond, 1, 1
	e.HealthCheck = &hc
	h.set(config.SourceDocker, e)
	eventually(t, "a marked down", func() bool {
		es, _ := h.r.Entrypoint("web")
		return !es.Backends[0].Up
	})
	if code, _, _ := h.get("web.test", "/"); code != 200 {
		t.Fatalf("every backend down: %d, want the backend's answer (fail open)", code)
	}
}

func TestPassiveEjectionWithMaxShareAndFailOpen(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: 2, EjectTime: 10 * time.Second})
	a, b := newBackend(t, "a"), newBackend(t, "b")
	a.mode.Store(modeFail)
	b.mode.Store(modeFail)
	h.set(config.SourceDocker, ep("web", a.backend(), b.backend()))
	for i := 0; i < 4; i++ { // two failures each
		h.get("web.test", "/")
	}
	es, _ := h.r.Entrypoint("web")
	ejected := 0
	for _, bs := range es.Backends {
		if bs.Ejected {
			ejected++
		}
	}
	if ejected != 1 {
		t.Fatalf("%d of 2 backends ejected, want 1 (max share 50%%)", ejected)
	}
	// The ejected one gets nothing while the other is in rotation.
	which := a
	other := b
	if es.Backends[1].Ejected {
		which, other = b, a
	}
	before := which.hits.Load()
	other.mode.Store(modeOK)
	for i := 0; i < 6; i++ {
		h.get("web.test", "/")
	}
	if which.hits.Load() != before {
		t.Fatal("an ejected backend got traffic")
	}
	// Ejection ends after its time; the next one lasts twice as long.
	h.clock.Advance(10 * time.Second)
	for i := 0; i < 6; i++ {
		h.get("web.test", "/")
	}
	if which.hits.Load() < before+2 {
		t.Fatalf("ejection did not end: %d hits", which.hits.Load()-before)
	}
	es, _ = h.r.Entrypoint("web")
	for i, bs := range es.Backends {
		if bs.Ejected {
			want := h.clock.Now().Add(20 * time.Second)
			if !bs.EjectedUntil.Equal(want) {
				t.Fatalf("backend %d ejected until %v, want %v (doubled)", i, bs.EjectedUntil, want)
			}
		}
	}
}

func TestPassiveEjectionFailsOpenWithOneBackend(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: 1})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend()))
	h.get("web.test", "/fail")
	es, _ := h.r.Entrypoint("web")
	if !es.Backends[0].Ejected {
		t.Fatal("not ejected")
	}
	if code, _, _ := h.get("web.test", "/"); code != 200 {
		t.Fatalf("the only backend is ejected: %d, want the backend's answer (fail open)", code)
	}
}

func TestStateSurvivesReloads(t *testing.T) {
	h := newHarness(t, Options{})
	a, other := newBackend(t, "a"), newBackend(t, "other")
	web := withBreaker(ep("web", a.backend()), ratioParams())
	h.set(config.SourceDocker, web)
	tripped(t, h, "web", "web.test")

	// An unrelated container starts and stops: web's breaker stays open.
	h.set(config.SourceDocker, web, ep("unrelated", other.backend()))
	expectOpen(t, h, "web.test", "10")
	h.set(config.SourceDocker, web)
	expectOpen(t, h, "web.test", "10")
	h.r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep("api-thing", other.backend())}})
	expectOpen(t, h, "web.test", "10")

	// A changed cooldown applies to the next trip.
	p := ratioParams()
	p.Cooldown = 30 * time.Second
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), p))
	expectOpen(t, h, "web.test", "10") // the current open period is unchanged
	h.clock.Advance(10 * time.Second)
	if code, _, _ := h.get("web.test", "/fail"); code != 500 { // the probe fails
		t.Fatalf("probe: %d", code)
	}
	expectOpen(t, h, "web.test", "30")
}

func TestRemovedRouteAnswers503ThenDisappears(t *testing.T) {
	h := newHarnessWith(t, router.Options{RemovedRouteGrace: time.Minute}, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	tripped(t, h, "web", "web.test")
	h.set(config.SourceDocker)
	code, _, resp := h.get("web.test", "/")
	if code != 503 || resp.Header.Get(HeaderDiagnostic) != DiagnosticNoHealthyBackend {
		t.Fatalf("just removed: %d %q, want 503 no-healthy-backend", code, resp.Header.Get(HeaderDiagnostic))
	}
	// Back within the grace period: the state (open breaker) is still there.
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	expectOpen(t, h, "web.test", "10")
	h.set(config.SourceDocker)
	h.clock.Advance(time.Minute)
	h.set(config.SourceDocker) // any update sweeps (a timer does it otherwise)
	if code, _, _ := h.get("web.test", "/"); code != 404 {
		t.Fatalf("after the grace period: %d, want 404", code)
	}
	if h.r.Tracks("web") {
		t.Fatal("state kept after the grace period")
	}
	// A new route with the same id starts fresh.
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("state %s, want a fresh closed breaker", s)
	}
}

func TestAPIDeleteIsImmediate(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceAPI, ep("web", a.backend()))
	h.set(config.SourceAPI)
	if code, _, _ := h.get("web.test", "/"); code != 404 {
		t.Fatalf("deleted API route: %d, want 404", code)
	}
}

func TestCollisionDiagnosticsReachTheStore(t *testing.T) {
	h := newHarness(t, Options{})
	a, b := newBackend(t, "a"), newBackend(t, "b")
	older := ep("docker-web", a.backend())
	older.Hosts = []string{"same.test"}
	older.Created = epoch.Add(-time.Hour)
	newer := ep("api-web", b.backend())
	newer.Hosts = []string{"same.test"}
	h.set(config.SourceDocker, older)
	h.set(config.SourceAPI, newer)
	if _, body, _ := h.get("same.test", "/"); body != "ok from a" {
		t.Fatalf("winner served %q, want the older route", body)
	}
	n := 0
	for _, d := range h.r.Diagnostics() {
		if d.Code == "W018" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d W018 diagnostics, want 2: %v", n, h.r.Diagnostics())
	}
	es, _ := h.r.Entrypoint("api-web")
	if len(es.Diagnostics) != 1 || es.Diagnostics[0].Code != "W018" {
		t.Fatalf("entrypoint diagnostics %v", es.Diagnostics)
	}
	if v := metricValue(t, h, "levee_diagnostics", map[string]string{"code": "W018", "severity": "warn"}); v != 2 {
		t.Fatalf("levee_diagnostics{W018} = %v", v)
	}
	// Resolving the collision clears them.
	h.set(config.SourceAPI)
	for _, d := range h.r.Diagnostics() {
		if d.Code == "W018" {
			t.Fatalf("stale W018: %v", d)
		}
	}
}

func TestControlBreaker(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()), ep("plain", a.backend()))
	events, cancel := h.r.Subscribe(16)
	defer cancel()
	if err := h.r.ControlBreaker("web", status.ActionOpen, "alice"); err != nil {
		t.Fatal(err)
	}
	for e := range events {
		if be, ok := e.Data.(status.BreakerEvent); ok {
			if be.To != "open" || be.Rule != "manual" || be.By != "alice" {
				t.Fatalf("manual opening event %+v", be)
			}
			break
		}
	}
	code, _, _ := h.get("web.test", "/")
	if code != 503 || a.hits.Load() != 0 {
		t.Fatalf("forced open: %d, %d hits", code, a.hits.Load())
	}
	if err := h.r.ControlBreaker("web", status.ActionClose, "test"); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := h.get("web.test", "/"); code != 200 {
		t.Fatalf("forced closed: %d", code)
	}
	for _, c := range []struct{ route, action string }{{"nope", status.ActionOpen}, {"plain", status.ActionOpen}} {
		if err := h.r.ControlBreaker(c.route, c.action, "test"); err == nil || !strings.Contains(err.Error(), "not found") {
			t.Errorf("%s: err %v, want not found", c.route, err)
		}
	}
	if err := h.r.ControlBreaker("web", "explode", "test"); err == nil {
		t.Error("unknown action accepted")
	}
}

func TestEventsAndTransitionLogs(t *testing.T) {
	h := newHarness(t, Options{})
	events, cancel := h.r.Subscribe(64)
	defer cancel()
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	tripped(t, h, "web", "web.test")

	var types []string
	var opened *status.BreakerEvent
	for len(types) < 2 {
		select {
		case e := <-events:
			types = append(types, e.Type)
			if be, ok := e.Data.(status.BreakerEvent); ok {
				opened = &be
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("events so far: %v", types)
		}
	}
	if types[0] != status.EventRoute || opened == nil || opened.Event != "opened" || opened.Rule != "error_ratio" || opened.RetryAfter != 10 {
		t.Fatalf("events %v, breaker event %+v", types, opened)
	}
	if _, err := json.Marshal(opened); err != nil {
		t.Fatal(err)
	}

	var line map[string]any
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["event"] == "breaker_opened" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no breaker_opened log line in:\n%s", h.logs.String())
	}
	for k, want := range map[string]any{"level": "warn", "route": "web", "from": "closed", "to": "open", "rule": "error_ratio", "retry_after": 10.0} {
		if line[k] != want {
			t.Errorf("log field %s = %v, want %v", k, line[k], want)
		}
	}
}

func TestEventBusDropsAndCounts(t *testing.T) {
	h := newHarness(t, Options{})
	_, cancel := h.r.Subscribe(1)
	defer cancel()
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("one", a.backend()))
	h.set(config.SourceDocker, ep("one", a.backend()), ep("two", a.backend()))
	h.set(config.SourceDocker, ep("one", a.backend()), ep("two", a.backend()), ep("three", a.backend()))
	if got := metricValue(t, h, "levee_events_dropped_total", nil); got != 2 {
		t.Fatalf("levee_events_dropped_total = %v, want 2", got)
	}
}

func TestMetricsAfterAScriptedSequence(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	h.get("web.test", "/")
	h.get("web.test", "/")
	// The count window holds the last 4 outcomes: 2 successes and 2
	// failures reach the 0.5 threshold, so the last 2 of these 4 are
	// rejected.
	tripped(t, h, "web", "web.test")
	h.get("web.test", "/")
	h.get("web.test", "/")
	h.get("nowhere.test", "/")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"levee_requests_total", map[string]string{"route": "web", "code": "200"}, 2},
		{"levee_requests_total", map[string]string{"route": "web", "code": "500"}, 2},
		{"levee_requests_total", map[string]string{"route": "web", "code": "503"}, 4},
		{"levee_requests_total", map[string]string{"route": "(unmatched)", "code": "404"}, 1},
		{"levee_breaker_rejected_total", map[string]string{"route": "web"}, 4},
		{"levee_breaker_state", map[string]string{"route": "web"}, 1},
		{"levee_breaker_transitions_total", map[string]string{"route": "web", "to": "open", "rule": "error_ratio"}, 1},
		{"levee_backend_up", map[string]string{"route": "web", "backend": "127.0.0.1:" + portOf(a)}, 1},
		{"levee_request_duration_seconds", nil, 9}, // sample count, all routes (unmatched included)
	} {
		if got := metricValue(t, h, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Unmatched requests have no breaker and no retries: no such series.
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if hasLabels(m, map[string]string{"route": "(unmatched)"}) &&
				mf.GetName() != "levee_requests_total" && mf.GetName() != "levee_request_duration_seconds" {
				t.Errorf("%s has a series for unmatched requests", mf.GetName())
			}
		}
	}
}

func TestAccessLogLines(t *testing.T) {
	h := newHarness(t, Options{AccessLog: true})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	h.get("web.test", "/hello")
	h.get("nowhere.test", "/x")
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["event"] == "access" {
			lines = append(lines, m)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("%d access lines:\n%s", len(lines), h.logs.String())
	}
	l := lines[0]
	for k, want := range map[string]any{"route": "web", "method": "GET", "host": "web.test", "path": "/hello",
		"status": 200.0, "attempts": 1.0, "backend": "127.0.0.1:" + portOf(a), "breaker": "closed"} {
		if l[k] != want {
			t.Errorf("access field %s = %v, want %v", k, l[k], want)
		}
	}
	if _, ok := l["duration_ms"]; !ok {
		t.Error("no duration_ms")
	}
	if lines[1]["status"] != 404.0 || lines[1]["diagnostic"] != DiagnosticNoRoute {
		t.Errorf("short-circuited line %v", lines[1])
	}

	quiet := newHarness(t, Options{})
	quiet.set(config.SourceDocker, ep("web", a.backend()))
	quiet.get("web.test", "/")
	if strings.Contains(quiet.logs.String(), `"event":"access"`) {
		t.Fatal("access log written while switched off")
	}
}

// findMetric gathers the registry and returns the series of name with
// the labels, or nil.
func findMetric(t *testing.T, h *harness, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if hasLabels(m, labels) {
				return m
			}
		}
	}
	return nil
}

// metricValue returns a counter/gauge value or a histogram's sample
// count; 0 when absent.
func metricValue(t *testing.T, h *harness, name string, labels map[string]string) float64 {
	t.Helper()
	m := findMetric(t, h, name, labels)
	switch {
	case m == nil:
		return 0
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	got := map[string]string{}
	for _, lp := range m.GetLabel() {
		got[lp.GetName()] = lp.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func TestClientGoneIsNeutral(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), breaker.Params{Threshold: 0.5, MinRequests: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.front.URL+"/hang", nil)
	req.Host = "web.test"
	done := make(chan error, 1)
	go func() {
		_, err := h.front.Client().Do(req)
		done <- err
	}()
	waitArrived(t, a)
	cancel()
	<-done
	g := routeGuard(t, h, "web")
	eventually(t, "the cancelled request reported", func() bool { return g.Breaker().Stats().Neutral == 1 })
	if st := g.Breaker().Stats(); st.State != breaker.Closed || st.Failures != 0 {
		t.Fatalf("a client going away counted against the backend: %+v", st)
	}
}

func TestBodyAbortedAfterHeadersKeepsTheOutcome(t *testing.T) {
	h := newHarness(t, Options{})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close() // 993 bytes short
	}))
	defer be.Close()
	u, _ := url.Parse(be.URL)
	port, _ := strconv.Atoi(u.Port())
	h.set(config.SourceDocker, withBreaker(ep("web", config.Backend{Address: "127.0.0.1", Port: port, Weight: 1}), breaker.Params{Threshold: 0.5, MinRequests: 1}))
	resp := h.do(http.MethodGet, "web.test", "/", nil)
	_, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatal("the client got a complete-looking body from a broken backend response")
	}
	st := routeGuard(t, h, "web").Breaker().Stats()
	if st.State != breaker.Closed || st.Successes != 1 || st.Failures != 0 {
		t.Fatalf("outcome changed after the headers: %+v", st)
	}
}

func TestSlowCallsTrip(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	// Every call is slower than 1ns: two successes trip the slow-call rule.
	p := breaker.Params{MinRequests: 2, Threshold: 1, SlowCallDuration: time.Nanosecond, SlowCallThreshold: 0.5}
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), p))
	h.get("web.test", "/")
	h.get("web.test", "/")
	st, _ := h.r.Breaker("web")
	if st.State != "open" || st.LastTransition.Rule != "slow_calls" {
		t.Fatalf("breaker %+v, want open by slow_calls", st)
	}
}

func TestDiagnosticsAreLoggedOnceAndPublished(t *testing.T) {
	h := newHarness(t, Options{})
	events, cancel := h.r.Subscribe(16)
	defer cancel()
	d := diagnostics.Diagnostic{
		Code: diagnostics.BadCircuitBreaker, Severity: diagnostics.Warn,
		Source: diagnostics.Source{Provider: config.SourceDocker, ObjectID: "c1", ObjectName: "shop-1", Service: "shop"},
		Key:    "levee.http.shop.circuitBreaker.threshold", Value: "2", Fallback: "0.5",
		Message: "threshold must be a ratio", Hint: "use 0.5 for 50%",
	}
	for i := 0; i < 3; i++ { // resyncs repeat the same set
		h.r.Update(config.SourceUpdate{Source: config.SourceDocker, Diagnostics: []diagnostics.Diagnostic{d}})
	}
	if n := strings.Count(h.logs.String(), `"event":"diagnostic"`); n != 1 {
		t.Fatalf("diagnostic logged %d times, want once:\n%s", n, h.logs.String())
	}
	var line map[string]any
	sc := bufio.NewScanner(strings.NewReader(h.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["event"] == "diagnostic" {
			line = m
		}
	}
	for k, want := range map[string]any{"level": "warn", "code": "W024", "provider": "docker", "object": "shop-1",
		"service": "shop", "key": d.Key, "value": "2", "fallback": "0.5", "hint": d.Hint, "message": d.Message} {
		if line[k] != want {
			t.Errorf("log field %s = %v, want %v", k, line[k], want)
		}
	}
	// A diagnostic without fallback or hint leaves those fields out.
	quiet := d
	quiet.Code, quiet.Key, quiet.Fallback, quiet.Hint = diagnostics.UnknownKey, "levee.http.shop.colour", "", ""
	h.r.Update(config.SourceUpdate{Source: config.SourceAPI, Diagnostics: []diagnostics.Diagnostic{quiet}})
	if strings.Contains(h.logs.String(), `"fallback":""`) || strings.Contains(h.logs.String(), `"hint":""`) {
		t.Errorf("empty fallback/hint logged:\n%s", h.logs.String())
	}
	select {
	case e := <-events:
		de, ok := e.Data.(status.DiagnosticEvent)
		if e.Type != status.EventDiagnostic || !ok || de.Change != "added" || de.Diagnostic != d {
			t.Fatalf("event %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no diagnostic event")
	}
	h.r.Update(config.SourceUpdate{Source: config.SourceDocker})
	if !strings.Contains(h.logs.String(), `"event":"diagnostic_resolved"`) {
		t.Fatal("resolution not logged")
	}
}

func TestGraceExpiresWithoutFurtherUpdates(t *testing.T) {
	h := newHarnessWith(t, router.Options{Clock: router.RealClock{}, RemovedRouteGrace: 50 * time.Millisecond}, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend()))
	h.set(config.SourceDocker)
	eventually(t, "the removed route to 404 after its grace", func() bool {
		code, _, _ := h.get("web.test", "/")
		return code == http.StatusNotFound
	})
	eventually(t, "its state to be dropped", func() bool {
		ok := h.r.Tracks("web")
		return !ok
	})
}

func TestRetryReplaysSmallBodiesOnly(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%d:%x", len(b), sha256.Sum256(b))
	}))
	defer echo.Close()
	u, _ := url.Parse(echo.URL)
	port, _ := strconv.Atoi(u.Port())
	good := config.Backend{Address: "127.0.0.1", Port: port, Weight: config.DefaultWeight} // as heavy as the dead one
	h := newHarness(t, Options{EjectAfter: -1})
	e := ep("web", deadBackend(t), good)
	e.Retry.Attempts = 2
	h.set(config.SourceDocker, e)

	small := strings.Repeat("s", maxReplayBody)
	for i := 0; i < 2; i++ { // round robin: one of the two starts on the dead backend
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader(small))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("%d:%x", len(small), sha256.Sum256([]byte(small))); resp.StatusCode != 200 || string(body) != want {
			t.Fatalf("small POST %d: %d %q, want the body replayed intact", i, resp.StatusCode, body)
		}
	}
	large := strings.Repeat("L", maxReplayBody+1)
	codes := map[int]int{}
	for i := 0; i < 2; i++ {
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader(large))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == 200 && string(body) != fmt.Sprintf("%d:%x", len(large), sha256.Sum256([]byte(large))) {
			t.Fatalf("large POST body mangled: %q", body)
		}
	}
	if codes[200] != 1 || codes[503] != 1 {
		t.Fatalf("large POSTs %v: the one that met the dead backend must not be retried (503: nothing reached a backend)", codes)
	}
}

// A route's own consecutiveFailures applies over the handler's default (5).
func TestPassiveEjectionPerRouteConsecutiveFailures(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	web := ep("web", a.backend())
	web.PassiveHealth = config.PassiveHealth{ConsecutiveFailures: 2, EjectTime: 30 * time.Second,
		MaxEjectTime: time.Minute, MaxEjectedShare: 0.5}
	h.set(config.SourceDocker, web)
	h.get("web.test", "/fail")
	if es, _ := h.r.Entrypoint("web"); es.Backends[0].Ejected {
		t.Fatal("ejected after 1 failure, want 2")
	}
	h.get("web.test", "/fail")
	es, _ := h.r.Entrypoint("web")
	if !es.Backends[0].Ejected {
		t.Fatal("not ejected after 2 failures (route's consecutiveFailures=2)")
	}
	if want := h.clock.Now().Add(30 * time.Second); !es.Backends[0].EjectedUntil.Equal(want) {
		t.Fatalf("ejected until %v, want %v (route's ejectTime)", es.Backends[0].EjectedUntil, want)
	}
}

// A route's own maxEjectedShare caps how many of its backends are ejected.
func TestPassiveEjectionPerRouteMaxShare(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  int
	}{{0.75, 3}, {0, 2}} { // 0: the handler's default, half
		h := newHarness(t, Options{})
		var bs []config.Backend
		for _, name := range []string{"a", "b", "c", "d"} {
			b := newBackend(t, name)
			b.mode.Store(modeFail)
			bs = append(bs, b.backend())
		}
		web := ep("web", bs...)
		web.PassiveHealth = config.PassiveHealth{ConsecutiveFailures: 1, MaxEjectedShare: tc.share}
		h.set(config.SourceDocker, web)
		for i := 0; i < 12; i++ {
			h.get("web.test", "/")
		}
		es, _ := h.r.Entrypoint("web")
		ejected := 0
		for _, b := range es.Backends {
			if b.Ejected {
				ejected++
			}
		}
		if ejected != tc.want {
			t.Errorf("maxEjectedShare %v: %d of 4 ejected, want %d", tc.share, ejected, tc.want)
		}
	}
}
