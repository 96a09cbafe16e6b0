package proxy

import (
	"net/http"
	"testing"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
	"github.com/levee-proxy/levee/router/traffic"
)

func routeTrafficOf(t *testing.T, h *harness, id string) status.RouteTraffic {
	t.Helper()
	rt, ok := h.r.RouteTraffic(id)
	if !ok {
		t.Fatalf("no traffic view of route %s", id)
	}
	return rt
}

// Every answered request counts in its route's ring and in that of the
// backend that answered; 5xx answers are errors, Levee's own included.
// The ring follows the injected clock: a window later the figures are
// gone.
func TestTrafficCountsRequestsErrorsAndBackends(t *testing.T) {
	h := newHarness(t, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend()))
	if got := h.r.Traffic().Routes; len(got) != 0 {
		t.Fatalf("traffic before any request: %+v", got)
	}
	for range 7 {
		if code, _, _ := h.get("web.test", "/"); code != http.StatusOK {
			t.Fatalf("status %d, want 200", code)
		}
	}
	for range 3 {
		if code, _, _ := h.get("web.test", "/fail"); code != http.StatusInternalServerError {
			t.Fatalf("status %d, want 500", code)
		}
	}
	rt := routeTrafficOf(t, h, "web")
	if rt.Requests != 10 || rt.Errors != 3 || rt.ErrorRatio != 0.3 {
		t.Fatalf("route figures %d requests, %d errors, ratio %v; want 10, 3, 0.3", rt.Requests, rt.Errors, rt.ErrorRatio)
	}
	if want := 10 / traffic.RateWindow.Seconds(); rt.RPS != want {
		t.Errorf("rps = %v, want %v", rt.RPS, want)
	}
	if rt.P50Ms <= 0 || rt.P99Ms < rt.P50Ms {
		t.Errorf("p50 %v ms, p99 %v ms: want 0 < p50 ≤ p99", rt.P50Ms, rt.P99Ms)
	}
	if len(rt.Points) != traffic.Buckets || rt.Points[len(rt.Points)-1].Requests != 10 {
		t.Errorf("points %+v: want %d with the 10 requests in the last", rt.Points, traffic.Buckets)
	}
	if len(rt.Backends) != 1 || rt.Backends[0].Requests != 10 || rt.Backends[0].Errors != 3 {
		t.Fatalf("backend figures %+v, want 10 requests, 3 errors", rt.Backends)
	}
	if all := h.r.Traffic(); len(all.Routes) != 1 || all.Routes[0].Route != "web" || all.WindowSeconds != traffic.Window.Seconds() {
		t.Fatalf("Traffic() = %+v", all)
	}

	h.clock.Advance(traffic.Window + traffic.BucketWidth)
	if rt := routeTrafficOf(t, h, "web"); rt.Requests != 0 || rt.Backends[0].Requests != 0 {
		t.Fatalf("a window later: %d requests (backend %d), want 0", rt.Requests, rt.Backends[0].Requests)
	}
}

// Levee's own refusal (no backend at all: 503) is an error of the route,
// with no backend to blame.
func TestTrafficCountsLeveesOwnAnswers(t *testing.T) {
	h := newHarness(t, Options{})
	h.set(config.SourceDocker, ep("empty"))
	if code, _, _ := h.get("empty.test", "/"); code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", code)
	}
	if rt := routeTrafficOf(t, h, "empty"); rt.Requests != 1 || rt.Errors != 1 {
		t.Fatalf("figures %d requests, %d errors; want 1, 1", rt.Requests, rt.Errors)
	}
}
