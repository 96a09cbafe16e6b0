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
	b := newBus("e", nil)
	b.publish(status.Event{Type: status.EventHistory})
	for i := range RecentEvents + 5 {
		b.publish(status.Event{Type: status.EventRoute, Time: epoch.Add(time.Duration(i) * time.Second)})
	}
	got, _ := b.last()
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

// A subscriber that names the last event it saw gets, in the same instant
// as its subscription, exactly the remembered events after it; an id of
// another process (or none that can be read) gets the whole ring; an
// empty id gets none.
func TestSubscribeAfterReplaysWhatCameBetween(t *testing.T) {
	b := newBus("e1", nil)
	b.publish(status.Event{Type: status.EventRoute})
	b.publish(status.Event{Type: status.EventHistory})
	_, last := b.last()
	b.publish(status.Event{Type: status.EventBreaker})
	b.publish(status.Event{Type: status.EventDiagnostic})

	ch, missed, cancel := b.subscribeAfter(4, last)
	defer cancel()
	if len(missed) != 2 || missed[0].Type != status.EventBreaker || missed[1].Type != status.EventDiagnostic {
		t.Fatalf("after %s: replayed %+v, want the breaker and diagnostic events", last, missed)
	}
	if missed[0].ID != "e1-3" || missed[1].ID != "e1-4" {
		t.Fatalf("ids %s %s, want e1-3 e1-4", missed[0].ID, missed[1].ID)
	}
	b.publish(status.Event{Type: status.EventFallback})
	if e := <-ch; e.Type != status.EventFallback || e.ID != "e1-5" {
		t.Fatalf("live event %+v, want fallback e1-5", e)
	}
	for _, other := range []string{"e0-3", "garbage", "e1-x", "e1-99"} {
		_, all, cancel := b.subscribeAfter(1, other)
		cancel()
		if len(all) != 4 {
			t.Errorf("after %q: %d events replayed, want the whole ring (4)", other, len(all))
		}
	}
	_, none, cancel2 := b.subscribeAfter(1, "")
	cancel2()
	if len(none) != 0 {
		t.Errorf("no id: %d events replayed, want none", len(none))
	}
	_, latest := b.last()
	_, none, cancel3 := b.subscribeAfter(1, latest)
	cancel3()
	if len(none) != 0 {
		t.Errorf("after the latest id: %d events replayed, want none", len(none))
	}
}
