package docker

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/e2e/logbuf"
	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/prometheus/client_golang/prometheus"
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
// test can feed or break. A hung call blocks until its context ends, like
// a request to an engine that never answers.
type fakeEngine struct {
	mu         sync.Mutex
	containers map[string]container.InspectResponse
	down       error
	hangs      map[string]bool // call name → it hangs
	refusal    error           // answer to opening the event stream
	lists      int
	inspects   map[string]int
	streams    chan *fakeStream
}

// fakeStream is one subscription; ctx is the subscriber's, so a test can
// see the provider abandon it.
type fakeStream struct {
	eng  *fakeEngine
	ctx  context.Context
	msgs chan events.Message
	errs chan error
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		containers: map[string]container.InspectResponse{},
		inspects:   map[string]int{},
		hangs:      map[string]bool{},
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

// refuseEvents makes opening the event stream fail with err (nil: open
// again), like a socket proxy that does not allow /events.
func (e *fakeEngine) refuseEvents(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.refusal = err
}

func (e *fakeEngine) setDown(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.down = err
}

// setHang makes a call ("ping", "events", "list", "inspect") block until
// its caller gives up, or answer again.
func (e *fakeEngine) setHang(call string, on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.hangs[call] = on
}

// hang blocks until ctx ends when call is set to hang, and reports whether
// it did.
func (e *fakeEngine) hang(ctx context.Context, call string) bool {
	e.mu.Lock()
	on := e.hangs[call]
	e.mu.Unlock()
	if on {
		<-ctx.Done()
	}
	return on
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

func (e *fakeEngine) ContainerList(ctx context.Context, _ client.ContainerListOptions) ([]container.Summary, error) {
	if e.hang(ctx, "list") {
		return nil, ctx.Err()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down != nil {
		return nil, e.down
	}
	e.lists++
	var out []container.Summary
	for id, c := range e.containers {
		if c.State != nil && c.State.Running {
			out = append(out, container.Summary{ID: id, Labels: c.Config.Labels})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (e *fakeEngine) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	if e.hang(ctx, "inspect") {
		return container.InspectResponse{}, ctx.Err()
	}
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

func (e *fakeEngine) Ping(ctx context.Context) error {
	if e.hang(ctx, "ping") {
		return ctx.Err()
	}
	e.mu.Lock()
	down := e.down
	e.mu.Unlock()
	return down
}

// Events blocks until the stream is open, as the client's does (it
// returns once the engine has sent the response headers).
func (e *fakeEngine) Events(ctx context.Context, _ client.EventsListOptions) (<-chan events.Message, <-chan error) {
	s := &fakeStream{eng: e, ctx: ctx, msgs: make(chan events.Message), errs: make(chan error, 1)}
	if e.hang(ctx, "events") {
		s.errs <- ctx.Err()
		return s.msgs, s.errs
	}
	e.mu.Lock()
	down := cmp.Or(e.down, e.refusal)
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

// send delivers one event; it blocks until the provider takes it. Like the
// engine, a container event carries the container's labels among its
// attributes.
func (s *fakeStream) send(t *testing.T, typ events.Type, action, id string, attrs map[string]string) {
	t.Helper()
	if typ == events.ContainerEventType {
		merged := map[string]string{}
		s.eng.mu.Lock()
		if c, ok := s.eng.containers[id]; ok && c.Config != nil {
			maps.Copy(merged, c.Config.Labels)
		}
		s.eng.mu.Unlock()
		maps.Copy(merged, attrs)
		attrs = merged
	}
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

// unlabelled marks a ctr that carries no label at all: by default a ctr
// carries one levee.* label, so that the provider finds it relevant.
var unlabelled = map[string]string{}

func (c ctr) inspect() container.InspectResponse {
	if c.labels == nil {
		c.labels = map[string]string{"levee.test": "fake"}
	} else if len(c.labels) == 0 {
		c.labels = nil
	}
	r := container.InspectResponse{
		ID:              c.id,
		Name:            "/" + c.name,
		Created:         "2026-01-02T03:04:05.123456789Z",
		State:           &container.State{Running: true, Paused: c.paused},
		Config:          &container.Config{Labels: c.labels, ExposedPorts: network.PortSet{}},
		NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{}},
	}
	for _, p := range c.ports {
		r.Config.ExposedPorts[network.MustParsePort(p)] = struct{}{}
	}
	for n, ip := range c.nets {
		r.NetworkSettings.Networks[n] = &network.EndpointSettings{IPAddress: netip.MustParseAddr(ip)}
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
type syncBuffer struct{ logbuf.Buffer }

// lines returns the log lines at level whose message contains substr.
func (b *syncBuffer) lines(level, substr string) []string {
	return b.Lines(`"level":"`+level+`"`, substr)
}

var errDown = errors.New("connection refused")

// wireEngine serves a fakeEngine over the Docker Engine HTTP API on a
// loopback listener, for tests of the real client. While silent it accepts
// connections and never answers (nor reads them): an engine that hangs.
// Calls the fakeEngine is told to hang get no response headers.
type wireEngine struct {
	eng    *fakeEngine
	host   string
	silent atomic.Bool
	// noPing answers /_ping 403, like a socket proxy that does not allow it.
	noPing atomic.Bool
	mu     sync.Mutex
	held   []net.Conn
}

// serveWire serves eng until the test ends.
func serveWire(t *testing.T, eng *fakeEngine) *wireEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &wireEngine{eng: eng, host: "tcp://" + ln.Addr().String()}
	srv := &http.Server{Handler: w}
	go func() { _ = srv.Serve(gateListener{ln, w}) }()
	t.Cleanup(func() {
		srv.Close()
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, c := range w.held {
			c.Close()
		}
	})
	return w
}

// gateListener holds the connections accepted while the engine is silent.
type gateListener struct {
	net.Listener
	w *wireEngine
}

func (l gateListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil || !l.w.silent.Load() {
			return c, err
		}
		l.w.mu.Lock()
		l.w.held = append(l.w.held, c)
		l.w.mu.Unlock()
	}
}

var apiVersionPrefix = regexp.MustCompile(`^/v[0-9.]+/`)

func (w *wireEngine) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	path := apiVersionPrefix.ReplaceAllString(r.URL.Path, "/")
	rest, isContainer := strings.CutPrefix(path, "/containers/")
	id, isJSON := strings.CutSuffix(rest, "/json")
	inspecting := isContainer && isJSON && id != "" && !strings.Contains(id, "/")
	switch {
	case path == "/_ping" && w.noPing.Load():
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(rw, `{"message":"forbidden"}`)
	case path == "/_ping":
		if err := w.eng.Ping(r.Context()); err != nil {
			http.Error(rw, err.Error(), http.StatusInternalServerError)
			return
		}
		rw.Header().Set("Api-Version", "1.41")
		rw.Header().Set("Ostype", "linux")
		_, _ = io.WriteString(rw, "OK")
	case path == "/containers/json":
		list, err := w.eng.ContainerList(r.Context(), client.ContainerListOptions{})
		writeEngineJSON(rw, list, err)
	case inspecting:
		info, err := w.eng.ContainerInspect(r.Context(), id)
		writeEngineJSON(rw, info, err)
	case path == "/events":
		w.events(rw, r)
	default:
		writeEngineJSON(rw, nil, fmt.Errorf("page not found: %s", r.URL.Path))
	}
}

// events streams the fakeEngine's next subscription as the engine does:
// headers once subscribed, then one JSON message per event; a break the
// test sends ends the response.
func (w *wireEngine) events(rw http.ResponseWriter, r *http.Request) {
	msgs, errs := w.eng.Events(r.Context(), client.EventsListOptions{})
	select {
	case err := <-errs:
		writeEngineJSON(rw, nil, err)
		return
	default:
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(http.StatusOK)
	flusher := rw.(http.Flusher)
	flusher.Flush()
	enc := json.NewEncoder(rw)
	for {
		select {
		case m := <-msgs:
			_ = enc.Encode(m)
			flusher.Flush()
		case <-errs:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// writeEngineJSON answers v, or err as the engine does ({"message": ...};
// 404 for a missing container).
func writeEngineJSON(rw http.ResponseWriter, v any, err error) {
	rw.Header().Set("Content-Type", "application/json")
	if err != nil {
		status := http.StatusInternalServerError
		if isNotFound(err) || strings.HasPrefix(err.Error(), "page not found") {
			status = http.StatusNotFound
		}
		rw.WriteHeader(status)
		_ = json.NewEncoder(rw).Encode(map[string]string{"message": err.Error()})
		return
	}
	_ = json.NewEncoder(rw).Encode(v)
}

// metricValue is the value of the series name{labels} in reg, or -1 when
// there is none.
func metricValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.Gauge != nil:
				return m.GetGauge().GetValue()
			case m.Counter != nil:
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// wantConnection checks the provider's state in its Status and its
// metrics (labelled with its source, docker or swarm).
func wantConnection(t *testing.T, p *Provider, reg prometheus.Gatherer, want provider.State) {
	t.Helper()
	if got := p.Status().State; got != want {
		t.Errorf("Status().State = %q, want %q", got, want)
	}
	docker := map[string]string{"provider": p.name}
	connected := 0.0
	if want == provider.StateConnected {
		connected = 1
	}
	if v := metricValue(t, reg, "levee_provider_connected", docker); v != connected {
		t.Errorf("levee_provider_connected = %v, want %v", v, connected)
	}
	for _, s := range []provider.State{provider.StateConnecting, provider.StateConnected, provider.StateDisconnected} {
		v := 0.0
		if s == want {
			v = 1
		}
		if got := metricValue(t, reg, "levee_provider_state", map[string]string{"provider": p.name, "state": string(s)}); got != v {
			t.Errorf("levee_provider_state{state=%q} = %v, want %v", s, got, v)
		}
	}
}
