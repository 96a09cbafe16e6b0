package proxy

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// seriesExist reports whether the registry has a series of name with
// route=id.
func seriesExist(t *testing.T, h *harness, name, id string) bool {
	t.Helper()
	return findMetric(t, h, name, map[string]string{"route": id}) != nil
}

// Bounded by default: an idle route has no request series; a request
// makes its levee_requests_total counter, a retry its levee_retries_total,
// a rejection its levee_breaker_rejected_total; latency is one histogram
// for every route. All of a route's series go when the router drops its
// state.
func TestRouteSeriesAreMadeOnUseAndGoWithTheRouteState(t *testing.T) {
	h := newHarnessWith(t, router.Options{RemovedRouteGrace: time.Minute}, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend()))
	for _, name := range []string{"levee_requests_total", "levee_retries_total", "levee_request_duration_seconds", "levee_breaker_rejected_total"} {
		if seriesExist(t, h, name, "web") {
			t.Errorf("%s{route=web} exists before any request: idle routes must cost no series", name)
		}
	}
	h.get("web.test", "/")
	if !seriesExist(t, h, "levee_requests_total", "web") {
		t.Fatal("levee_requests_total{route=web} missing after a request")
	}
	if seriesExist(t, h, "levee_request_duration_seconds", "web") {
		t.Fatal("a per-route latency histogram without --metrics-route-latency")
	}
	if got := metricValue(t, h, "levee_request_duration_seconds", nil); got != 1 {
		t.Fatalf("the all-routes latency histogram counted %v requests, want 1", got)
	}
	h.set(config.SourceDocker)
	h.clock.Advance(2 * time.Minute)
	h.set(config.SourceDocker) // sweeps
	for _, name := range []string{"levee_requests_total", "levee_retries_total", "levee_request_duration_seconds", "levee_breaker_rejected_total"} {
		if seriesExist(t, h, name, "web") {
			t.Errorf("%s{route=web} kept after the state was dropped", name)
		}
	}
}

// --metrics-route-latency: every route has its own latency histogram from
// the moment it exists, gone with its state.
func TestPerRouteLatencyAreOptIn(t *testing.T) {
	h := newHarnessWith(t, router.Options{RemovedRouteGrace: time.Minute}, Options{RouteLatency: true})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend()))
	if !seriesExist(t, h, "levee_request_duration_seconds", "web") {
		t.Fatal("no per-route latency histogram with RouteLatency")
	}
	h.get("web.test", "/")
	if got := metricValue(t, h, "levee_request_duration_seconds", map[string]string{"route": "web"}); got != 1 {
		t.Fatalf("web's histogram counted %v requests, want 1", got)
	}
	h.set(config.SourceDocker)
	h.clock.Advance(2 * time.Minute)
	h.set(config.SourceDocker)
	if seriesExist(t, h, "levee_request_duration_seconds", "web") {
		t.Fatal("the histogram of a dropped route is kept")
	}
}

// The bound of bounded metrics: /metrics at 10,000 routes, every route
// having answered (one in ten with a breaker), stays under 1.5 MB in the
// text format. (With a per-route latency histogram it was 12.8 MB.)
func TestMetricsSizeAt10kRoutesIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 routes")
	}
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	const n = 10_000
	eps := make([]config.Entrypoint, n)
	for i := range eps {
		eps[i] = ep(fmt.Sprintf("svc-%05d", i), a.backend())
		if i%10 == 3 {
			eps[i] = withBreaker(eps[i], ratioParams())
		}
	}
	h.set(config.SourceAPI, eps...)
	for i := range n {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = fmt.Sprintf("svc-%05d.test", i)
		rec := httptest.NewRecorder()
		h.p.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("request to route %d: %d", i, rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, req)
	size := rec.Body.Len()
	t.Logf("/metrics at %d routes: %d bytes, %d lines", n, size, strings.Count(rec.Body.String(), "\n"))
	if size > 1_500_000 {
		t.Fatalf("/metrics is %d bytes at %d routes, over the 1.5 MB bound", size, n)
	}
	if !strings.Contains(rec.Body.String(), `levee_requests_total{code="200",route="svc-09999"} 1`) {
		t.Fatal("a route's request counter is missing")
	}
}

// A route listing one address twice shares one backend state, and the
// scrape shows it once: a repeated label set would fail the whole scrape.
func TestRepeatedBackendAddressIsOneSeries(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend(), a.backend()))
	if code, _, _ := h.get("web.test", "/"); code != http.StatusOK {
		t.Fatalf("GET through a route listing one backend twice: %d", code)
	}
	if v := metricValue(t, h, "levee_backend_up", map[string]string{"route": "web"}); v != 1 {
		t.Fatalf("levee_backend_up = %v, want 1", v)
	}
}
