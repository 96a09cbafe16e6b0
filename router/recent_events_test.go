package router

import (
	"testing"

	"github.com/levee-proxy/levee/e2e/fakeclock"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/eventbus"
	"github.com/levee-proxy/levee/router/status"
)

// A route added before anyone subscribed is in the router's RecentEvents.
func TestRecentEventsHoldsWhatHappenedBeforeSubscribing(t *testing.T) {
	r := New(Options{Clock: fakeclock.New(epoch)})
	defer r.Close()
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{route("app", "/", "app.test")}})
	rec := r.RecentEvents()
	if rec.Size != eventbus.Recent {
		t.Fatalf("size %d, want %d", rec.Size, eventbus.Recent)
	}
	for _, e := range rec.Events {
		if d, ok := e.Data.(status.RouteEvent); ok && d.Route == "app" && d.Change == "added" {
			return
		}
	}
	t.Fatalf("no route added event for app in %+v", rec.Events)
}
