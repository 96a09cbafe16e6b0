package docker

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/router/config"
	"github.com/moby/moby/api/types/events"
)

// hangGrace is how long after its call timeout a hung call may be reported:
// scheduling on a shared machine, not a second timeout.
const hangGrace = 2 * time.Second

// waitLine polls logs until a line at level contains every part, and
// returns it with the time it took.
func waitLine(t *testing.T, logs *syncBuffer, began time.Time, level string, parts ...string) (string, time.Duration) {
	t.Helper()
	var line string
	dockertest.Eventually(t, waitLimit, func() error {
		for _, l := range logs.lines(level, "") {
			found := true
			for _, p := range parts {
				found = found && strings.Contains(l, p)
			}
			if found {
				line = l
				return nil
			}
		}
		return fmt.Errorf("no %s line with %q yet; logs:\n%s", level, parts, logs.String())
	})
	return line, time.Since(began)
}

func waitState(t *testing.T, p *Provider, want provider.State) {
	t.Helper()
	dockertest.Eventually(t, waitLimit, func() error {
		if got := p.Status().State; got != want {
			return fmt.Errorf("state %q, want %q", got, want)
		}
		return nil
	})
}

// An engine that accepts connections and never answers is reported within
// the call timeout (an error naming its address, state disconnected), and
// is connected to and synced once it answers.
func TestSilentEngineTimesOutThenConnects(t *testing.T) {
	const callTimeout = 300 * time.Millisecond
	eng := newFakeEngine()
	eng.set(ctr{id: "id-web", name: "web"}.inspect())
	w := serveWire(t, eng)
	w.silent.Store(true)
	began := time.Now()
	h := startWire(t, w.host, Options{CallTimeout: callTimeout})

	line, took := waitLine(t, h.logs, began, "error", "cannot reach the Docker engine at "+w.host, "no answer within 300ms")
	if took < callTimeout || took > callTimeout+hangGrace {
		t.Errorf("error logged after %v, want within the %v call timeout (+%v grace)", took, callTimeout, hangGrace)
	}
	if !strings.Contains(line, "ping the engine at "+w.host) {
		t.Errorf("error line %s: want it to say the ping went unanswered", line)
	}
	wantConnection(t, h.p, h.reg, provider.StateDisconnected)
	started := h.clock.Now()
	if st := h.p.Status(); !strings.Contains(st.LastError, w.host) || st.Synced || !st.Since.Equal(started) {
		t.Errorf("status = %+v, want the error naming %s, not synced, since the start (%v)", st, w.host, started)
	}

	w.silent.Store(false)
	h.clock.expectTimer(t, DefaultRetryMin)
	h.clock.Advance(DefaultRetryMin)
	eng.stream(t)
	if call, _ := h.rec.next(t); names(call.containers) != "web" {
		t.Fatalf("after connecting = %s, want web", names(call.containers))
	}
	waitState(t, h.p, provider.StateConnected)
	wantConnection(t, h.p, h.reg, provider.StateConnected)
	// Synced is set once the sink's Update returns; the recorder sees the
	// call from inside it, so wait for it rather than read it at once.
	dockertest.Eventually(t, waitLimit, func() error {
		if st := h.p.Status(); st.LastError != "" || st.Reconnects != 1 || !st.Synced || !st.Since.Equal(started.Add(DefaultRetryMin)) {
			return fmt.Errorf("status = %+v, want no error, 1 reconnect, synced, since the retry", st)
		}
		return nil
	})
	if v := metricValue(t, h.reg, "levee_provider_reconnects_total", map[string]string{"provider": config.SourceDocker}); v != 1 {
		t.Errorf("levee_provider_reconnects_total = %v, want 1", v)
	}
}

// An engine that answers /_ping, list and inspect but never opens its
// event stream: the failure is reported within the call timeout, the
// containers are synced all the same (routes follow the engine at the
// retry pace), and once the stream opens the provider connects and follows
// events.
func TestHungEventStreamStillSyncsThenConnects(t *testing.T) {
	const callTimeout = 300 * time.Millisecond
	eng := newFakeEngine()
	eng.set(ctr{id: "id-web", name: "web"}.inspect())
	eng.setHang("events", true)
	w := serveWire(t, eng)
	began := time.Now()
	h := startWire(t, w.host, Options{CallTimeout: callTimeout})

	_, took := waitLine(t, h.logs, began, "error", "open the event stream at "+w.host, "no answer within 300ms")
	if took < callTimeout || took > callTimeout+hangGrace {
		t.Errorf("error logged after %v, want within the %v call timeout (+%v grace)", took, callTimeout, hangGrace)
	}
	if call, _ := h.rec.next(t); names(call.containers) != "web" {
		t.Fatalf("sync without a stream = %s, want web", names(call.containers))
	}
	wantConnection(t, h.p, h.reg, provider.StateDisconnected)
	dockertest.Eventually(t, waitLimit, func() error {
		if !h.p.Synced() {
			return fmt.Errorf("Synced() = false after the sync without a stream")
		}
		return nil
	})

	// The next retry syncs again: web went away meanwhile.
	started := h.clock.Now()
	eng.del("id-web")
	h.clock.expectTimer(t, DefaultRetryMin)
	h.clock.Advance(DefaultRetryMin)
	if call, _ := h.rec.next(t); len(call.containers) != 0 {
		t.Fatalf("second sync without a stream = %s, want none", names(call.containers))
	}
	if st := h.p.Status(); st.Reconnects != 1 || !st.Since.Equal(started) {
		t.Errorf("status = %+v, want 1 reconnect, since the start (%v): retries do not move it", st, started)
	}

	eng.setHang("events", false)
	h.clock.expectTimer(t, 2*DefaultRetryMin)
	h.clock.Advance(2 * DefaultRetryMin)
	s := eng.stream(t)
	waitState(t, h.p, provider.StateConnected)
	wantConnection(t, h.p, h.reg, provider.StateConnected)
	eng.set(ctr{id: "id-api", name: "api"}.inspect())
	s.send(t, events.ContainerEventType, "start", "id-api", nil)
	if call, _ := h.rec.next(t); names(call.containers) != "api" {
		t.Fatalf("after a start event = %s, want api", names(call.containers))
	}
}

// An engine that refuses the event stream (a socket proxy without /events)
// is reported once as an error, not as a connection made and lost on every
// retry, and each retry still syncs.
func TestRefusedEventStreamIsAnErrorAndStillSyncs(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "id-web", name: "web"}.inspect())
	eng.refuseEvents(errors.New("403 Forbidden: /events is not allowed"))
	w := serveWire(t, eng)
	h := startWire(t, w.host, Options{})
	if call, _ := h.rec.next(t); names(call.containers) != "web" {
		t.Fatalf("sync without a stream = %s, want web", names(call.containers))
	}
	waitLine(t, h.logs, time.Now(), "error", "open the event stream at "+w.host, "/events is not allowed")
	h.clock.expectTimer(t, DefaultRetryMin)
	lists, _ := eng.counts()
	h.clock.Advance(DefaultRetryMin)
	h.clock.expectTimer(t, 2*DefaultRetryMin)
	if after, _ := eng.counts(); after <= lists {
		t.Errorf("lists = %d after a retry, want more than %d: each retry syncs", after, lists)
	}
	wantConnection(t, h.p, h.reg, provider.StateDisconnected)
	if n := len(h.logs.lines("error", "")); n != 1 {
		t.Errorf("error lines = %d, want 1; logs:\n%s", n, h.logs.String())
	}
	if n := len(h.logs.lines("warn", "")) + len(h.logs.lines("info", "connected")); n != 0 {
		t.Errorf("%d connected/lost lines, want none: the stream never opened; logs:\n%s", n, h.logs.String())
	}
}

// A socket proxy that does not allow /_ping answers it 403: an answer in
// time, so the provider connects and the watchdog keeps the connection.
func TestPingRefusedByASocketProxyCountsAsAnAnswer(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "id-web", name: "web"}.inspect())
	w := serveWire(t, eng)
	w.noPing.Store(true)
	h := startWire(t, w.host, Options{})
	s := eng.stream(t)
	if call, _ := h.rec.next(t); names(call.containers) != "web" {
		t.Fatalf("first sync = %s, want web", names(call.containers))
	}
	waitState(t, h.p, provider.StateConnected)
	h.clock.expectTimer(t, DefaultPingInterval)
	h.clock.Advance(DefaultPingInterval)
	h.clock.expectTimer(t, DefaultPingInterval) // re-armed: the refusal was an answer
	select {
	case <-s.ctx.Done():
		t.Fatal("the stream was abandoned after a refused ping")
	default:
	}
	wantConnection(t, h.p, h.reg, provider.StateConnected)
}

// Docker sends nothing on an idle stream: the watchdog's ping is what
// notices a hung engine. A ping that times out abandons the stream and
// reconnects with a full resync.
func TestWatchdogPingTimeoutReconnectsWithFullResync(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "id-a", name: "a"}.inspect())
	h := start(t, eng, Options{CallTimeout: 50 * time.Millisecond, PingInterval: 20 * time.Second})
	s := eng.stream(t)
	h.rec.next(t)
	wantConnection(t, h.p, h.reg, provider.StateConnected)

	// A quiet, answering engine keeps the stream.
	h.clock.expectTimer(t, 20*time.Second)
	h.clock.Advance(20 * time.Second)
	h.clock.expectTimer(t, 20*time.Second)
	select {
	case <-s.ctx.Done():
		t.Fatal("the stream was abandoned after an answered ping")
	default:
	}

	// The engine hangs; while it is cut off, a goes and b comes.
	eng.setHang("ping", true)
	eng.del("id-a")
	eng.set(ctr{id: "id-b", name: "b"}.inspect())
	h.clock.Advance(20 * time.Second)
	select {
	case <-s.ctx.Done():
	case <-time.After(waitLimit):
		t.Fatal("the stream was not abandoned after the ping timed out")
	}
	waitLine(t, h.logs, time.Now(), "warn", "lost the connection to the engine at tcp://fake:2375",
		"watchdog: ping the engine at tcp://fake:2375: no answer within 50ms")
	waitState(t, h.p, provider.StateDisconnected)
	wantConnection(t, h.p, h.reg, provider.StateDisconnected)

	eng.setHang("ping", false)
	h.clock.expectTimer(t, DefaultRetryMin)
	h.clock.Advance(DefaultRetryMin)
	eng.stream(t)
	if call, _ := h.rec.next(t); names(call.containers) != "b" {
		t.Fatalf("after the resync = %s, want b", names(call.containers))
	}
	if lists, _ := eng.counts(); lists != 2 {
		t.Errorf("lists = %d, want 2 (initial + resync)", lists)
	}
	waitState(t, h.p, provider.StateConnected)
	if st := h.p.Status(); st.Reconnects != 1 {
		t.Errorf("reconnects = %d, want 1", st.Reconnects)
	}
}

// Every engine call has its deadline: an inspect that hangs while
// following events ends the connection instead of the provider.
func TestHungInspectEndsTheConnection(t *testing.T) {
	eng := newFakeEngine()
	h := start(t, eng, Options{CallTimeout: 50 * time.Millisecond})
	s := eng.stream(t)
	h.rec.next(t)
	eng.setHang("inspect", true)
	s.send(t, events.ContainerEventType, "start", "id-x", map[string]string{"levee.enable": "true"})
	waitLine(t, h.logs, time.Now(), "warn", "inspect container id-x at tcp://fake:2375: no answer within 50ms")
	waitState(t, h.p, provider.StateDisconnected)
}
