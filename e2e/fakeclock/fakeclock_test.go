package fakeclock

import (
	"testing"
	"time"
)

func TestClockMovesOnlyWhenAdvanced(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(start)
	if !c.Now().Equal(start) {
		t.Fatalf("Now %v, want %v", c.Now(), start)
	}
	time.Sleep(time.Millisecond) // real time passes; the clock does not
	if !c.Now().Equal(start) {
		t.Fatalf("the clock moved by itself to %v", c.Now())
	}
	c.Advance(90 * time.Second)
	c.Advance(-30 * time.Second)
	if got, want := c.Now(), start.Add(time.Minute); !got.Equal(want) {
		t.Fatalf("after +90s -30s: %v, want %v", got, want)
	}
}
