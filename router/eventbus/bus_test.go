package eventbus

import (
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/status"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A Bus keeps the last Recent events, oldest first, history
// samples excluded: a view that opens later sees what it missed.
func TestRecentRing(t *testing.T) {
	b := New("e", nil)
	b.Publish(status.Event{Type: status.EventHistory})
	for i := range Recent + 5 {
		b.Publish(status.Event{Type: status.EventRoute, Time: epoch.Add(time.Duration(i) * time.Second)})
	}
	got, _ := b.Last()
	if len(got) != Recent {
		t.Fatalf("%d events kept, want %d", len(got), Recent)
	}
	for i, e := range got {
		if e.Type != status.EventRoute || !e.Time.Equal(epoch.Add(time.Duration(i+5)*time.Second)) {
			t.Fatalf("event %d = %s at %v, want route at +%ds", i, e.Type, e.Time, i+5)
		}
	}
}

// A subscriber that names the last event it saw gets, in the same instant
// as its subscription, exactly the remembered events after it; an id of
// another process (or none that can be read) gets the whole ring; an
// empty id gets none.
func TestSubscribeAfterReplaysWhatCameBetween(t *testing.T) {
	b := New("e1", nil)
	b.Publish(status.Event{Type: status.EventRoute})
	b.Publish(status.Event{Type: status.EventHistory})
	_, last := b.Last()
	b.Publish(status.Event{Type: status.EventBreaker})
	b.Publish(status.Event{Type: status.EventDiagnostic})

	ch, missed, cancel := b.SubscribeAfter(4, last)
	defer cancel()
	if len(missed) != 2 || missed[0].Type != status.EventBreaker || missed[1].Type != status.EventDiagnostic {
		t.Fatalf("after %s: replayed %+v, want the breaker and diagnostic events", last, missed)
	}
	if missed[0].ID != "e1-3" || missed[1].ID != "e1-4" {
		t.Fatalf("ids %s %s, want e1-3 e1-4", missed[0].ID, missed[1].ID)
	}
	b.Publish(status.Event{Type: status.EventFallback})
	if e := <-ch; e.Type != status.EventFallback || e.ID != "e1-5" {
		t.Fatalf("live event %+v, want fallback e1-5", e)
	}
	for _, other := range []string{"e0-3", "garbage", "e1-x", "e1-99"} {
		_, all, cancel := b.SubscribeAfter(1, other)
		cancel()
		if len(all) != 4 {
			t.Errorf("after %q: %d events replayed, want the whole ring (4)", other, len(all))
		}
	}
	_, none, cancel2 := b.SubscribeAfter(1, "")
	cancel2()
	if len(none) != 0 {
		t.Errorf("no id: %d events replayed, want none", len(none))
	}
	_, latest := b.Last()
	_, none, cancel3 := b.SubscribeAfter(1, latest)
	cancel3()
	if len(none) != 0 {
		t.Errorf("after the latest id: %d events replayed, want none", len(none))
	}
}

// A subscriber whose buffer is full loses the event, and onDrop is told;
// the publisher never waits for it, and the other subscribers get it.
func TestFullSubscriberLosesEventsWithoutBlocking(t *testing.T) {
	var drops int
	b := New("e", func() { drops++ })
	slow, cancelSlow := b.Subscribe(1)
	defer cancelSlow()
	fast, cancelFast := b.Subscribe(8)
	defer cancelFast()
	for range 3 {
		b.Publish(status.Event{Type: status.EventRoute})
	}
	if drops != 2 {
		t.Errorf("onDrop told %d times, want 2", drops)
	}
	if e := <-slow; e.ID != "e-1" {
		t.Errorf("the full subscriber got %s, want e-1", e.ID)
	}
	if len(fast) != 3 {
		t.Errorf("the other subscriber got %d events, want 3", len(fast))
	}
}
