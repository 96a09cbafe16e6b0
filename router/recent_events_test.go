package router

import (
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// The bus keeps the last RecentEvents events, oldest first, history
// samples excluded: a view that opens later sees what it missed.
func TestRecentEventsRing(t *testing.T) {
	b := newBus(nil)
	b.publish(status.Event{Type: status.EventHistory})
	for i := range RecentEvents + 5 {
		b.publish(status.Event{Type: status.EventRoute, Time: epoch.Add(time.Duration(i) * time.Second)})
	}
	got := b.last()
	if len(got) != RecentEvents {
		t.Fatalf("%d events kept, want %d", len(got), RecentEvents)
	}
	for i, e := range got {
		if e.Type != status.EventRoute || !e.Time.Equal(epoch.Add(time.Duration(i+5)*time.Second)) {
			t.Fatalf("event %d = %s at %v, want route at +%ds", i, e.Type, e.Time, i+5)
		}
	}
}

// A route added before anyone subscribed is in RecentEvents.
func TestRecentEventsHoldsWhatHappenedBeforeSubscribing(t *testing.T) {
	r := New(Options{Clock: &manualClock{now: epoch}})
	defer r.Close()
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{route("app", "/", "app.test")}})
	rec := r.RecentEvents()
	if rec.Size != RecentEvents {
		t.Fatalf("size %d, want %d", rec.Size, RecentEvents)
	}
	for _, e := range rec.Events {
		if d, ok := e.Data.(status.RouteEvent); ok && d.Route == "app" && d.Change == "added" {
			return
		}
	}
	t.Fatalf("no route added event for app in %+v", rec.Events)
}
