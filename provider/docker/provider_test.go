package docker

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

type harness struct {
	eng   *fakeEngine
	clock *fakeClock
	rec   *recorder
	logs  *syncBuffer
	reg   *prometheus.Registry
	p     *Provider
	done  chan error
}

// start runs a provider against eng with a fake clock; it is stopped when
// the test ends.
func start(t *testing.T, eng *fakeEngine, opts Options) *harness {
	t.Helper()
	h := newHarness(t, opts, func(opts Options) (*Provider, error) { return newProvider(opts, eng) })
	h.eng = eng
	return h
}

// startWire runs a provider with the real Docker client against host, with
// a fake clock driving its timers (backoff, watchdog, resync, debounce);
// call deadlines are wall-clock time.
func startWire(t *testing.T, host string, opts Options) *harness {
	t.Helper()
	opts.Host = host
	h := newHarness(t, opts, New)
	t.Cleanup(func() { _ = h.p.Close() })
	return h
}

// newHarness makes a provider with the test's clock, recorder, logs and
// registry (backoff without jitter unless opts has one) and runs it until
// the test ends.
func newHarness(t *testing.T, opts Options, build func(Options) (*Provider, error)) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), rec: newRecorder(), logs: &syncBuffer{}, reg: prometheus.NewRegistry(), done: make(chan error, 1)}
	opts.Clock = h.clock
	opts.Parse = h.rec.parse
	opts.Logger = zerolog.New(h.logs).Level(zerolog.DebugLevel)
	opts.Registerer = h.reg
	if opts.Jitter == nil {
		opts.Jitter = func() float64 { return 0 }
	}
	if opts.Hostname == "" {
		opts.Hostname = "not-a-container"
	}
	if opts.SelfID == "" {
		opts.SelfID = "not-a-container-id" // never the test machine's mountinfo
	}
	p, err := build(opts)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	ctx, cancel := context.WithCancel(context.Background())
	go func() { h.done <- h.p.Run(ctx, h.rec) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				t.Errorf("Run returned %v after cancel, want nil", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

func TestInitialSyncReportsContainerFacts(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{
		id: "id-web", name: "web", labels: map[string]string{"levee.enable": "true"},
		nets:  map[string]string{"zeta": "10.0.2.2", "alpha": "10.0.1.2"},
		ports: []string{"9090/tcp", "53/udp", "8080/tcp", "8080/udp"},
	}.inspect())
	eng.set(ctr{id: "id-paused", name: "paused", paused: true}.inspect())
	eng.set(ctr{id: "id-hc", name: "hc", health: "starting"}.inspect())
	// A HEALTHCHECK the engine has not reported on yet counts as starting.
	noState := ctr{id: "id-fresh", name: "fresh"}.inspect()
	noState.Config.Healthcheck = &container.HealthConfig{Test: []string{"CMD", "x"}}
	eng.set(noState)
	// HEALTHCHECK NONE disables an image's check.
	disabled := ctr{id: "id-none", name: "none"}.inspect()
	disabled.Config.Healthcheck = &container.HealthConfig{Test: []string{"NONE"}}
	eng.set(disabled)

	h := start(t, eng, Options{})
	call, upd := h.rec.next(t)
	// Synced turns true once the sink's Update has returned; the
	// recorder saw the call from inside it.
	deadline := time.Now().Add(5 * time.Second)
	for !h.p.Synced() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !h.p.Synced() {
		t.Error("Synced() = false after the first update returned")
	}
	if upd.Source != config.SourceDocker || len(upd.Entrypoints) != 4 {
		t.Errorf("update = source %q with %d entrypoints, want docker with 4", upd.Source, len(upd.Entrypoints))
	}
	if got := names(call.containers); got != "fresh,hc,none,web" {
		t.Fatalf("containers = %s, want fresh,hc,none,web (sorted, paused excluded)", got)
	}
	byName := map[string]labels.Container{}
	for _, c := range call.containers {
		byName[c.Name] = c
	}
	want := labels.Container{
		ID:           "id-web",
		Name:         "web",
		Created:      time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		Labels:       map[string]string{"levee.enable": "true"},
		Networks:     []labels.Network{{Name: "alpha", IP: "10.0.1.2"}, {Name: "zeta", IP: "10.0.2.2"}},
		ExposedPorts: []int{8080, 9090},
	}
	if got := byName["web"]; !reflect.DeepEqual(got, want) {
		t.Errorf("web facts =\n%+v\nwant\n%+v", got, want)
	}
	if c := byName["hc"]; !c.HasHealthcheck || c.Health != "starting" {
		t.Errorf("hc health = %v %q, want true starting", c.HasHealthcheck, c.Health)
	}
	if c := byName["fresh"]; !c.HasHealthcheck || c.Health != "starting" {
		t.Errorf("fresh health = %v %q, want true starting", c.HasHealthcheck, c.Health)
	}
	if c := byName["none"]; c.HasHealthcheck || c.Health != "" {
		t.Errorf("HEALTHCHECK NONE health = %v %q, want none", c.HasHealthcheck, c.Health)
	}
}

func TestSyncedFalseBeforeFirstSync(t *testing.T) {
	eng := newFakeEngine()
	eng.setDown(errDown)
	h := start(t, eng, Options{})
	h.clock.expectTimer(t, DefaultRetryMin)
	if h.p.Synced() {
		t.Error("Synced() = true while the engine is unreachable")
	}
}

// The first change after a quiet period is published at once (a lone
// `docker start` is routed without waiting); the rest of the burst is
// collected and published together when the window ends.
func TestEventBurstPublishesFirstChangeAtOnceAndCoalescesTheRest(t *testing.T) {
	eng := newFakeEngine()
	h := start(t, eng, Options{Debounce: 100 * time.Millisecond})
	s := eng.stream(t)
	if call, _ := h.rec.next(t); len(call.containers) != 0 {
		t.Fatalf("initial containers = %s, want none", names(call.containers))
	}
	for _, n := range []string{"a", "b", "c"} {
		eng.set(ctr{id: "id-" + n, name: n}.inspect())
		s.send(t, events.ContainerEventType, "start", "id-"+n, nil)
	}
	if call, _ := h.rec.next(t); names(call.containers) != "a" {
		t.Fatalf("first update = %s, want a at once", names(call.containers))
	}
	h.clock.expectTimer(t, 100*time.Millisecond)
	h.rec.none(t)
	h.clock.Advance(100 * time.Millisecond)
	if call, _ := h.rec.next(t); names(call.containers) != "a,b,c" {
		t.Fatalf("second update = %s, want a,b,c together", names(call.containers))
	}
	// That publish opened a new window; it ends quietly.
	h.clock.expectTimer(t, 100*time.Millisecond)
	h.clock.Advance(100 * time.Millisecond)
	h.rec.none(t)
	// Quiet again: the next change is published at once.
	eng.set(ctr{id: "id-d", name: "d"}.inspect())
	s.send(t, events.ContainerEventType, "start", "id-d", nil)
	if call, _ := h.rec.next(t); names(call.containers) != "a,b,c,d" {
		t.Fatalf("after a quiet window = %s, want a,b,c,d at once", names(call.containers))
	}
	lists, inspects := eng.counts()
	if lists != 1 {
		t.Errorf("lists = %d, want 1 (events must not re-list)", lists)
	}
	for _, n := range []string{"a", "b", "c"} {
		if inspects["id-"+n] != 1 {
			t.Errorf("inspects of %s = %d, want 1", n, inspects["id-"+n])
		}
	}
}

func TestStopDieDestroyPauseRemoveWithoutInspect(t *testing.T) {
	eng := newFakeEngine()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		eng.set(ctr{id: "id-" + n, name: n}.inspect())
	}
	h := start(t, eng, Options{})
	s := eng.stream(t)
	h.rec.next(t)
	_, before := eng.counts()
	s.send(t, events.ContainerEventType, "die", "id-a", nil)
	s.send(t, events.ContainerEventType, "stop", "id-a", nil)
	s.send(t, events.ContainerEventType, "stop", "id-b", nil)
	s.send(t, events.ContainerEventType, "destroy", "id-c", nil)
	s.send(t, events.ContainerEventType, "pause", "id-d", nil)
	if call, _ := h.rec.next(t); names(call.containers) != "b,c,d,e" {
		t.Fatalf("first update = %s, want b,c,d,e (die of a, at once)", names(call.containers))
	}
	h.clock.expectTimer(t, DefaultDebounce)
	h.clock.Advance(DefaultDebounce)
	call, _ := h.rec.next(t)
	if got := names(call.containers); got != "e" {
		t.Fatalf("containers = %s, want e", got)
	}
	if _, after := eng.counts(); !reflect.DeepEqual(before, after) {
		t.Errorf("inspects changed from %v to %v; removals need no inspect", before, after)
	}

	// Unpause brings d back.
	s.send(t, events.ContainerEventType, "unpause", "id-d", nil)
	h.clock.expectTimer(t, DefaultDebounce)
	h.clock.Advance(DefaultDebounce)
	if call, _ := h.rec.next(t); names(call.containers) != "d,e" {
		t.Fatalf("containers after unpause = %s, want d,e", names(call.containers))
	}
}

func TestHealthRenameAndNetworkEventsRefreshOneContainer(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "id-a", name: "a", health: "starting", nets: map[string]string{"front": "10.0.0.2"}}.inspect())
	h := start(t, eng, Options{})
	s := eng.stream(t)
	h.rec.next(t)

	step := func(name string, change ctr, typ events.Type, action, id string, attrs map[string]string, check func(labels.Container) bool) {
		t.Helper()
		eng.set(change.inspect())
		s.send(t, typ, action, id, attrs)
		h.clock.expectTimer(t, DefaultDebounce)
		h.clock.Advance(DefaultDebounce)
		call, _ := h.rec.next(t)
		if len(call.containers) != 1 || !check(call.containers[0]) {
			t.Fatalf("%s: containers = %+v", name, call.containers)
		}
	}
	step("healthy", ctr{id: "id-a", name: "a", health: "healthy", nets: map[string]string{"front": "10.0.0.2"}},
		events.ContainerEventType, "health_status: healthy", "id-a", nil,
		func(c labels.Container) bool { return c.Health == "healthy" })
	step("unhealthy", ctr{id: "id-a", name: "a", health: "unhealthy", nets: map[string]string{"front": "10.0.0.2"}},
		events.ContainerEventType, "health_status: unhealthy", "id-a", nil,
		func(c labels.Container) bool { return c.Health == "unhealthy" })
	step("rename", ctr{id: "id-a", name: "b", health: "unhealthy", nets: map[string]string{"front": "10.0.0.2"}},
		events.ContainerEventType, "rename", "id-a", nil,
		func(c labels.Container) bool { return c.Name == "b" })
	step("connect", ctr{id: "id-a", name: "b", health: "unhealthy", nets: map[string]string{"front": "10.0.0.2", "back": "10.0.9.2"}},
		events.NetworkEventType, "connect", "net-back-id", map[string]string{"container": "id-a", "name": "back"},
		func(c labels.Container) bool {
			return reflect.DeepEqual(c.Networks, []labels.Network{{Name: "back", IP: "10.0.9.2"}, {Name: "front", IP: "10.0.0.2"}})
		})
	step("disconnect", ctr{id: "id-a", name: "b", health: "unhealthy", nets: map[string]string{"back": "10.0.9.2"}},
		events.NetworkEventType, "disconnect", "net-front-id", map[string]string{"container": "id-a", "name": "front"},
		func(c labels.Container) bool {
			return reflect.DeepEqual(c.Networks, []labels.Network{{Name: "back", IP: "10.0.9.2"}})
		})
}

func TestStartOfStoppedContainerIsIgnored(t *testing.T) {
	eng := newFakeEngine()
	h := start(t, eng, Options{})
	s := eng.stream(t)
	h.rec.next(t)
	// A network connect precedes start: the container is not running yet,
	// so nothing changes and no update is armed.
	stopped := ctr{id: "id-x", name: "x"}.inspect()
	stopped.State.Running = false
	eng.set(stopped)
	s.send(t, events.NetworkEventType, "connect", "net", map[string]string{"container": "id-x"})
	// A vanished container is not an error either (its event carried
	// levee labels, so the provider asks about it).
	s.send(t, events.ContainerEventType, "start", "id-gone", map[string]string{"levee.enable": "true"})
	eng.set(ctr{id: "id-y", name: "y"}.inspect())
	s.send(t, events.ContainerEventType, "start", "id-y", nil)
	h.clock.expectTimer(t, DefaultDebounce)
	h.clock.Advance(DefaultDebounce)
	if call, _ := h.rec.next(t); names(call.containers) != "y" {
		t.Fatalf("containers = %s, want y", names(call.containers))
	}
}

func TestStreamErrorReconnectsWithBackoffAndResyncs(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "id-a", name: "a"}.inspect())
	h := start(t, eng, Options{})
	s := eng.stream(t)
	if call, _ := h.rec.next(t); names(call.containers) != "a" {
		t.Fatalf("initial = %s", names(call.containers))
	}
	// While the stream is down, a goes and b comes: no event will say so.
	eng.del("id-a")
	eng.set(ctr{id: "id-b", name: "b"}.inspect())
	s.errs <- errDown
	h.clock.expectTimer(t, DefaultRetryMin)
	h.clock.Advance(DefaultRetryMin)
	eng.stream(t)
	if call, _ := h.rec.next(t); names(call.containers) != "b" {
		t.Fatalf("after resync = %s, want b", names(call.containers))
	}
	if lists, _ := eng.counts(); lists != 2 {
		t.Errorf("lists = %d, want 2 (initial + resync)", lists)
	}
	if n := len(h.logs.lines("warn", "lost the connection to the engine at tcp://fake:2375")); n != 1 {
		t.Errorf("warn lines about the lost stream = %d, want 1; logs:\n%s", n, h.logs.String())
	}
	if n := len(h.logs.lines("info", "connected to the engine at tcp://fake:2375")); n != 2 {
		t.Errorf("info connected lines = %d, want 2", n)
	}
}

func TestUnreachableEngineLogsOneErrorBacksOffToCapAndResetsOnceStable(t *testing.T) {
	eng := newFakeEngine()
	eng.setDown(errDown)
	h := start(t, eng, Options{RetryMin: 250 * time.Millisecond, RetryMax: time.Second})
	for _, d := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, time.Second} {
		h.clock.expectTimer(t, d)
		h.clock.Advance(d)
	}
	// The engine comes back, and the stream breaks at once: a connection
	// that did not stay up keeps the backoff where it was.
	h.clock.expectTimer(t, time.Second)
	eng.setDown(nil)
	h.clock.Advance(time.Second)
	s := eng.stream(t)
	h.rec.next(t)
	s.errs <- errDown
	h.clock.expectTimer(t, time.Second)
	// A connection that stays up through a watchdog ping resets it: the
	// next loss retries after the minimum.
	h.clock.Advance(time.Second)
	s = eng.stream(t)
	h.clock.expectTimer(t, DefaultPingInterval)
	h.clock.Advance(DefaultPingInterval)
	h.clock.expectTimer(t, DefaultPingInterval) // re-armed: the ping was answered
	s.errs <- errDown
	h.clock.expectTimer(t, 250*time.Millisecond)

	errs := h.logs.lines("error", "")
	if len(errs) != 1 || !strings.Contains(errs[0], "tcp://fake:2375") || !strings.Contains(errs[0], "connection refused") {
		t.Errorf("error lines = %q, want exactly one naming tcp://fake:2375 and the cause", errs)
	}
	if n := len(h.logs.lines("debug", "still unreachable")); n < 5 {
		t.Errorf("debug retry lines = %d, want >= 5", n)
	}
	if n := len(h.logs.lines("info", "connected to the engine")); n != 2 {
		t.Errorf("info connected lines = %d, want 2", n)
	}
}

func TestPeriodicResyncCatchesMissedChanges(t *testing.T) {
	eng := newFakeEngine()
	h := start(t, eng, Options{ResyncInterval: time.Minute})
	eng.stream(t)
	h.rec.next(t)
	h.clock.expectTimer(t, time.Minute)
	eng.set(ctr{id: "id-a", name: "a"}.inspect())
	h.clock.Advance(time.Minute)
	if call, _ := h.rec.next(t); names(call.containers) != "a" {
		t.Fatalf("after resync = %s, want a", names(call.containers))
	}
	// A resync that finds nothing new sends nothing.
	h.clock.expectTimer(t, time.Minute)
	h.clock.Advance(time.Minute)
	h.clock.expectTimer(t, time.Minute) // armed after the second resync finished
	h.rec.none(t)
	if lists, _ := eng.counts(); lists != 3 {
		t.Errorf("lists = %d, want 3", lists)
	}
}

func TestOwnContainerNetworksReachTheParser(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "0123456789abcdef", name: "levee", nets: map[string]string{"front": "10.0.0.9", "back": "10.0.1.9"}}.inspect())
	h := start(t, eng, Options{Hostname: "0123456789ab", Parser: labels.Parser{Prefix: "edge"}})
	s := eng.stream(t)
	call, _ := h.rec.next(t)
	if !reflect.DeepEqual(call.parser.OwnNetworks, []string{"back", "front"}) || call.parser.Prefix != "edge" || call.parser.OnHost {
		t.Fatalf("parser = %+v, want prefix edge, own networks [back front], not on the host", call.parser)
	}
	eng.set(ctr{id: "0123456789abcdef", name: "levee", nets: map[string]string{"front": "10.0.0.9", "back": "10.0.1.9", "extra": "10.0.2.9"}}.inspect())
	s.send(t, events.NetworkEventType, "connect", "net-extra", map[string]string{"container": "0123456789abcdef"})
	h.clock.expectTimer(t, DefaultDebounce)
	h.clock.Advance(DefaultDebounce)
	call, _ = h.rec.next(t)
	if !reflect.DeepEqual(call.parser.OwnNetworks, []string{"back", "extra", "front"}) {
		t.Fatalf("own networks after connect = %v", call.parser.OwnNetworks)
	}
}

// A custom host name (compose `hostname:`) does not hide Levee's own
// container: its ID comes from mountinfo.
func TestOwnContainerFoundByIDDespiteCustomHostname(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	eng := newFakeEngine()
	eng.set(ctr{id: id, name: "levee", nets: map[string]string{"edge": "10.0.0.9"}}.inspect())
	h := start(t, eng, Options{Hostname: "proxy-1", SelfID: id})
	call, _ := h.rec.next(t)
	if !reflect.DeepEqual(call.parser.OwnNetworks, []string{"edge"}) {
		t.Fatalf("own networks = %v, want [edge]", call.parser.OwnNetworks)
	}
}

func TestContainerIDFromMountinfo(t *testing.T) {
	const id = "4b825dc642cb6eb9a060e54bf8d69288fbee4904c1e0d2f6a3a2c6c1c0a3b9f1"
	inContainer := `612 590 0:52 / / rw,relatime master:300 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/ABC
623 612 254:1 /var/lib/docker/containers/` + id + `/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda1 rw
624 612 254:1 /var/lib/docker/containers/` + id + `/hostname /etc/hostname rw,relatime - ext4 /dev/vda1 rw
`
	if got := containerIDFromMountinfo(strings.NewReader(inContainer)); got != id {
		t.Errorf("in a container: %q, want %q", got, id)
	}
	onHost := `22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
30 22 0:26 / /var/lib/docker/containers rw - tmpfs tmpfs rw
31 22 0:27 /containers/short/hostname /x rw - ext4 /dev/vda1 rw
`
	if got := containerIDFromMountinfo(strings.NewReader(onHost)); got != "" {
		t.Errorf("on the host: %q, want none", got)
	}
}

func TestNotInAContainerMeansOnTheHost(t *testing.T) {
	eng := newFakeEngine()
	// A container whose name equals the host name is not Levee's own.
	eng.set(ctr{id: "ffff", name: "myhost", nets: map[string]string{"front": "10.0.0.9"}}.inspect())
	h := start(t, eng, Options{Hostname: "myhost"})
	call, _ := h.rec.next(t)
	if len(call.parser.OwnNetworks) != 0 || !call.parser.OnHost {
		t.Fatalf("own networks = %v, on the host %v: want none, on the host", call.parser.OwnNetworks, call.parser.OnHost)
	}
}

// The delays grow from min by doubling, stop at max, stay within
// [base/2, base] of their base delay whatever the jitter source says, and
// start over after reset.
func TestBackoffGrowsCapsJittersAndResets(t *testing.T) {
	const lo, hi = 250 * time.Millisecond, 30 * time.Second
	bases := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	// A scripted source: the extremes of [0, 1) and the middle.
	script := []float64{0, 0.5, 0.999, 0, 0.25, 0.999, 0.5, 0, 0.999, 0.75}
	i := 0
	b := newBackoff(lo, hi, func() float64 { i++; return script[i-1] })
	for n, base := range bases {
		want := base - time.Duration(script[n]*float64(base/2))
		if got := b.delay(); got != want {
			t.Fatalf("delay %d = %v, want %v (base %v, jitter %v)", n, got, want, base, script[n])
		}
	}
	b.reset()
	i = 0
	if d := b.delay(); d != lo {
		t.Fatalf("after reset = %v, want %v", d, lo)
	}

	// A seeded random source: every delay within its bounds, never above
	// the cap, and not shorter than the one before until the cap.
	rng := rand.New(rand.NewPCG(1, 2))
	b = newBackoff(lo, hi, rng.Float64)
	base, prev := lo, time.Duration(0)
	for n := range 40 {
		d := b.delay()
		if d < base/2 || d > base || d > hi {
			t.Fatalf("delay %d = %v, want within [%v, %v]", n, d, base/2, base)
		}
		if base < hi && d < prev {
			t.Fatalf("delay %d = %v shrank from %v before the cap", n, d, prev)
		}
		prev, base = d, min(base*2, hi)
	}
	// Out-of-range jitter is clamped; zero bounds take the defaults.
	if d := newBackoff(time.Second, time.Second, func() float64 { return 7 }).delay(); d != time.Second/2 {
		t.Errorf("jitter 7 gave %v, want 500ms", d)
	}
	if d := newBackoff(0, 0, nil).delay(); d != DefaultRetryMin {
		t.Errorf("zero bounds delay = %v, want default %v", d, DefaultRetryMin)
	}
}

// A provider given no backoff bounds (as `levee serve` wired it) backs off
// to DefaultRetryMax, not every DefaultRetryMin forever.
func TestDefaultBackoffGrowsToItsCap(t *testing.T) {
	eng := newFakeEngine()
	eng.setDown(errDown)
	h := start(t, eng, Options{})
	for _, d := range []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		4 * time.Second, 8 * time.Second, 16 * time.Second, DefaultRetryMax, DefaultRetryMax} {
		h.clock.expectTimer(t, d)
		h.clock.Advance(d)
	}
}

// The wired jitter source places each delay below its base delay.
func TestBackoffDelaysAreJittered(t *testing.T) {
	eng := newFakeEngine()
	eng.setDown(errDown)
	h := start(t, eng, Options{RetryMin: time.Second, RetryMax: 4 * time.Second, Jitter: func() float64 { return 0.5 }})
	for _, d := range []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 3 * time.Second} {
		h.clock.expectTimer(t, d)
		h.clock.Advance(d)
	}
}

// Containers that carry no levee.* (or traefik.*) label cost no inspect:
// not at the initial list, not on their start or health events, not when
// they join a network. They never reach the parser or the logs.
func TestUnlabelledContainersCostNoInspect(t *testing.T) {
	eng := newFakeEngine()
	eng.set(ctr{id: "id-web", name: "web", labels: map[string]string{"levee.enable": "true"}}.inspect())
	eng.set(ctr{id: "id-db", name: "db", labels: map[string]string{"com.docker.compose.service": "db"}, health: "healthy"}.inspect())
	eng.set(ctr{id: "id-bare", name: "bare", labels: unlabelled}.inspect())
	eng.set(ctr{id: "id-tr", name: "tr", labels: map[string]string{"traefik.enable": "true"}}.inspect())
	h := start(t, eng, Options{})
	s := eng.stream(t)
	call, _ := h.rec.next(t)
	if got := names(call.containers); got != "tr,web" {
		t.Fatalf("containers parsed = %s, want tr,web (the traefik one for I003)", got)
	}
	_, inspects := eng.counts()
	if inspects["id-db"] != 0 || inspects["id-bare"] != 0 {
		t.Fatalf("inspects at the initial list = %v, want none of id-db, id-bare", inspects)
	}

	s.send(t, events.ContainerEventType, "health_status: healthy", "id-db", nil)
	s.send(t, events.ContainerEventType, "start", "id-bare", nil)
	s.send(t, events.NetworkEventType, "connect", "net", map[string]string{"container": "id-db"})
	// A labelled container's start is inspected: proof that the events
	// above were taken and ignored, not still queued.
	eng.set(ctr{id: "id-api", name: "api", labels: map[string]string{"levee.enable": "true"}}.inspect())
	s.send(t, events.ContainerEventType, "start", "id-api", nil)
	h.clock.expectTimer(t, DefaultDebounce)
	h.clock.Advance(DefaultDebounce)
	call, _ = h.rec.next(t)
	if got := names(call.containers); got != "api,tr,web" {
		t.Fatalf("containers parsed = %s, want api,tr,web", got)
	}
	_, inspects = eng.counts()
	if inspects["id-db"] != 0 || inspects["id-bare"] != 0 || inspects["id-api"] != 1 {
		t.Fatalf("inspects after events = %v, want id-api once and none of id-db, id-bare", inspects)
	}
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(line, "id-db") || strings.Contains(line, "id-bare") || strings.Contains(line, `"db"`) {
			t.Errorf("log mentions an unlabelled container: %s", line)
		}
	}
}
