package docker

import (
	"reflect"
	"testing"

	"github.com/moby/moby/api/types/events"
)

func TestTerminatingSignal(t *testing.T) {
	for sig, want := range map[string]bool{
		"15": true, "9": true, "2": true, "3": true,
		"SIGTERM": true, "TERM": true, "sigkill": true, "SIGINT": true, "QUIT": true,
		"1": false, "10": false, "SIGHUP": false, "SIGUSR1": false, "USR2": false, "": false, "x": false,
	} {
		if got := terminatingSignal(sig); got != want {
			t.Errorf("terminatingSignal(%q) = %v, want %v", sig, got, want)
		}
	}
}

// A kill with a terminating signal takes the container out at once, with
// no inspect; events during its shutdown do not bring it back; its start
// does. A kill with another signal changes nothing.
func TestKillEventTakesStoppingContainerOutUntilStarted(t *testing.T) {
	eng := newFakeEngine()
	for _, n := range []string{"a", "b", "c"} {
		eng.set(ctr{id: "id-" + n, name: n}.inspect())
	}
	h := start(t, eng, Options{})
	s := eng.stream(t)
	h.rec.next(t)
	_, before := eng.counts()

	s.send(t, events.ContainerEventType, "kill", "id-c", map[string]string{"signal": "1"}) // SIGHUP: a reload
	s.send(t, events.ContainerEventType, "kill", "id-a", map[string]string{"signal": "15"})
	if call, _ := h.rec.next(t); names(call.containers) != "b,c" {
		t.Fatalf("after kill -TERM of a = %s, want b,c (at once)", names(call.containers))
	}
	if _, after := eng.counts(); !reflect.DeepEqual(before, after) {
		t.Errorf("inspects changed from %v to %v; a kill needs no inspect", before, after)
	}
	// The container is still running while it shuts down: a health or
	// network event must not re-add it.
	s.send(t, events.ContainerEventType, "health_status: healthy", "id-a", nil)
	s.send(t, events.NetworkEventType, "disconnect", "net", map[string]string{"container": "id-a"})
	s.send(t, events.ContainerEventType, "die", "id-a", nil)
	s.send(t, events.ContainerEventType, "start", "id-a", nil)
	h.clock.expectTimer(t, DefaultDebounce)
	h.clock.Advance(DefaultDebounce)
	if call, _ := h.rec.next(t); names(call.containers) != "a,b,c" {
		t.Fatalf("after restart = %s, want a,b,c", names(call.containers))
	}
	if _, after := eng.counts(); after["id-a"] != before["id-a"]+1 {
		t.Errorf("inspects of a = %d, want %d: only its start inspects", after["id-a"], before["id-a"]+1)
	}
}

// A stop mark never outlives a full sync: a container that survived its
// signal (or was restarted while the stream was down) is routed again.
func TestFullSyncForgetsStoppingMarks(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "id-a", name: "a"}.inspect())
	h := start(t, eng, Options{})
	s := eng.stream(t)
	h.rec.next(t)
	s.send(t, events.ContainerEventType, "kill", "id-a", map[string]string{"signal": "SIGQUIT"})
	if call, _ := h.rec.next(t); names(call.containers) != "" {
		t.Fatalf("after kill = %q, want none", names(call.containers))
	}
	s.errs <- errDown
	h.clock.expectTimer(t, DefaultRetryMin)
	h.clock.Advance(DefaultRetryMin)
	eng.stream(t)
	if call, _ := h.rec.next(t); names(call.containers) != "a" {
		t.Fatalf("after resync = %q, want a", names(call.containers))
	}
}
