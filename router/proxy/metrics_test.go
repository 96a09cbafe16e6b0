package proxy

import (
	"testing"
	"time"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// seriesExist reports whether the registry has a series of name with
// route=id.
func seriesExist(t *testing.T, h *harness, name, id string) bool {
	t.Helper()
	return findMetric(t, h, name, map[string]string{"route": id}) != nil
}

// A route's request series exist, at zero, from the moment the route
// does (before any request), and go when the router drops its state.
func TestRouteSeriesLiveWithTheRouteState(t *testing.T) {
	h := newHarnessWith(t, router.Options{RemovedRouteGrace: time.Minute}, Options{})
	a := newBackend(t, "a")
	h.set(config.SourceDocker, ep("web", a.backend()))
	for _, name := range []string{"levee_retries_total", "levee_request_duration_seconds", "levee_breaker_rejected_total"} {
		if !seriesExist(t, h, name, "web") {
			t.Errorf("%s{route=web} missing before any request", name)
		}
	}
	h.get("web.test", "/")
	if !seriesExist(t, h, "levee_requests_total", "web") {
		t.Fatal("levee_requests_total{route=web} missing after a request")
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
