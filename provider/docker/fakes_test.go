package docker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/go-connections/nat"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
)

const waitLimit = 10 * time.Second

// fakeClock fires timers only when the test advances it. Every NewTimer is
// reported on created, so tests know what the provider is waiting for.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  []*fakeTimer
	created chan time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Unix(1_700_000_000, 0), created: make(chan time.Duration, 1000)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	t := &fakeTimer{c: make(chan time.Time, 1), at: c.now.Add(d), clock: c}
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	c.created <- d
	return t
}

// Advance moves time forward and fires every timer that is due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
			continue
		}
		kept = append(kept, t)
	}
	c.timers = kept
}

// expectTimer waits until the provider arms a timer of duration d, skipping
// timers of other durations, and fails the test after waitLimit.
func (c *fakeClock) expectTimer(t *testing.T, d time.Duration) {
	t.Helper()
	deadline := time.After(waitLimit)
	var seen []time.Duration
	for {
		select {
		case got := <-c.created:
			if got == d {
				return
			}
			seen = append(seen, got)
		case <-deadline:
			t.Fatalf("no %v timer armed within %v (saw %v)", d, waitLimit, seen)
		}
	}
}

type fakeTimer struct {
	c     chan time.Time
	at    time.Time
	clock *fakeClock
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	for i, x := range t.clock.timers {
		if x == t {
			t.clock.timers = append(t.clock.timers[:i], t.clock.timers[i+1:]...)
			return true
		}
	}
	return false
}

// errNotFound satisfies the client's not-found check (errdefs interface).
type errNotFound struct{ id string }

func (e errNotFound) Error() string { return "no such container: " + e.id }
func (errNotFound) NotFound()       {}

// fakeEngine is an in-memory engine. Each Events call opens a stream the
// test can feed or break.
type fakeEngine struct {
	mu         sync.Mutex
	containers map[string]container.InspectResponse
	down       error
	lists      int
	inspects   map[string]int
	streams    chan *fakeStream
}

type fakeStream struct {
	msgs chan events.Message
	errs chan error
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		containers: map[string]container.InspectResponse{},
		inspects:   map[string]int{},
		streams:    make(chan *fakeStream, 100),
	}
}

func (e *fakeEngine) DaemonHost() string { return "tcp://fake:2375" }

func (e *fakeEngine) set(c container.InspectResponse) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.containers[c.ID] = c
}

func (e *fakeEngine) del(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.containers, id)
}

func (e *fakeEngine) setDown(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = err
}

func (e *fakeEngine) counts() (lists int, inspects map[string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := map[string]int{}
	for k, v := range e.inspects {
		m[k] = v
	}
	return e.lists, m
}

func (e *fakeEngine) ContainerList(ctx context.Context, _ container.ListOptions) ([]container.Summary, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down != nil {
		return nil, e.down
	}
	e.lists++
	var out []container.Summary
	for id, c := range e.containers {
		if c.State != nil && c.State.Running {
			out = append(out, container.Summary{ID: id})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (e *fakeEngine) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down != nil {
		return container.InspectResponse{}, e.down
	}
	e.inspects[id]++
	if c, ok := e.containers[id]; ok {
		return c, nil
	}
	// Like the engine, accept a unique ID prefix.
	for full, c := range e.containers {
		if strings.HasPrefix(full, id) {
			return c, nil
		}
	}
	return container.InspectResponse{}, errNotFound{id}
}

func (e *fakeEngine) Events(ctx context.Context, _ events.ListOptions) (<-chan events.Message, <-chan error) {
	s := &fakeStream{msgs: make(chan events.Message), errs: make(chan error, 1)}
	e.mu.Lock()
	down := e.down
	e.mu.Unlock()
	if down != nil {
		s.errs <- down
		return s.msgs, s.errs
	}
	e.streams <- s
	return s.msgs, s.errs
}

// stream waits for the provider to subscribe.
func (e *fakeEngine) stream(t *testing.T) *fakeStream {
	t.Helper()
	select {
	case s := <-e.streams:
		return s
	case <-time.After(waitLimit):
		t.Fatal("provider did not subscribe to events")
		return nil
	}
}

// send delivers one event; it blocks until the provider takes it.
func (s *fakeStream) send(t *testing.T, typ events.Type, action, id string, attrs map[string]string) {
	t.Helper()
	select {
	case s.msgs <- events.Message{Type: typ, Action: events.Action(action), Actor: events.Actor{ID: id, Attributes: attrs}}:
	case <-time.After(waitLimit):
		t.Fatalf("provider did not take event %s %s", action, id)
	}
}

// ctr builds an inspect answer for a running container.
type ctr struct {
	id, name string
	labels   map[string]string
	nets     map[string]string
	ports    []string
	health   string // "" none; else the State.Health status
	paused   bool
}

func (c ctr) inspect() container.InspectResponse {
	r := container.InspectResponse{
		ContainerJSONBase: &container.ContainerJSONBase{
			ID:      c.id,
			Name:    "/" + c.name,
			Created: "2026-01-02T03:04:05.123456789Z",
			State:   &container.State{Running: true, Paused: c.paused},
		},
		Config:          &container.Config{Labels: c.labels, ExposedPorts: nat.PortSet{}},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{}},
	}
	for _, p := range c.ports {
		r.Config.ExposedPorts[nat.Port(p)] = struct{}{}
	}
	for n, ip := range c.nets {
		r.NetworkSettings.Networks[n] = &network.EndpointSettings{IPAddress: ip}
	}
	if c.health != "" {
		r.Config.Healthcheck = &container.HealthConfig{Test: []string{"CMD", "/echo", "-healthcheck", "x"}}
		r.State.Health = &container.Health{Status: container.HealthStatus(c.health)}
	}
	return r
}

// parseCall is one call of the injected parse step.
type parseCall struct {
	parser     labels.Parser
	containers []labels.Container
}

// recorder is the injected parse step plus the sink: every parse is
// recorded, and it emits one entrypoint per container (ID = container name)
// so the updates reaching the sink are checkable too.
type recorder struct {
	calls   chan parseCall
	updates chan config.SourceUpdate
}

func newRecorder() *recorder {
	return &recorder{calls: make(chan parseCall, 1000), updates: make(chan config.SourceUpdate, 1000)}
}

func (r *recorder) parse(p labels.Parser, cs []labels.Container) ([]config.Entrypoint, []diagnostics.Diagnostic) {
	r.calls <- parseCall{parser: p, containers: cs}
	var eps []config.Entrypoint
	for _, c := range cs {
		eps = append(eps, config.Entrypoint{ID: c.Name, Source: config.SourceDocker})
	}
	return eps, nil
}

func (r *recorder) Update(u config.SourceUpdate) { r.updates <- u }

// next returns the next parse call and its update.
func (r *recorder) next(t *testing.T) (parseCall, config.SourceUpdate) {
	t.Helper()
	select {
	case c := <-r.calls:
		select {
		case u := <-r.updates:
			return c, u
		case <-time.After(waitLimit):
			t.Fatal("parse ran but no update reached the sink")
		}
	case <-time.After(waitLimit):
		t.Fatal("no update within the deadline")
	}
	return parseCall{}, config.SourceUpdate{}
}

// none asserts that no update is pending. It is only meaningful after the
// provider has demonstrably handled everything sent to it (events are
// handed over synchronously, and a later step has been observed).
func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case c := <-r.calls:
		t.Fatalf("unexpected update with %d containers", len(c.containers))
	default:
	}
}

func names(cs []labels.Container) string {
	var n []string
	for _, c := range cs {
		n = append(n, c.Name)
	}
	return strings.Join(n, ",")
}

// syncBuffer is a concurrency-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the log lines at level whose message contains substr.
func (b *syncBuffer) lines(level, substr string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.Contains(l, fmt.Sprintf(`"level":"%s"`, level)) && strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

var errDown = errors.New("connection refused")
