package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"go.yaml.in/yaml/v3"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/e2e/logbuf"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// seedPayload is the API's reference example payload, exactly as written.
const seedPayload = `{"name":"app","protocol":"Http",
 "backends":[{"address":"10.0.0.5","port":8080,"weight":100}],
 "config":{"hostnames":["app.example.com"],
           "circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":10}}}`

// fakeRouter stands in for the router runtime: it merges source updates
// (it is the store's Sink too), serves fixed breakers and diagnostics, and
// has an event bus the test can publish on.
type fakeRouter struct {
	mu       sync.Mutex
	sources  map[string][]config.Entrypoint
	policies map[string][]config.Policy
	updates  []config.SourceUpdate
	breakers map[string]*status.BreakerStatus
	points   map[string][]status.HistoryPoint // History's points by route
	diags    []diagnostics.Diagnostic
	controls []string // "route action who"
	// controlErr, when set, is what ControlBreaker returns.
	controlErr error
	subs       []chan status.Event
	// subscribed receives once per Subscribe call.
	subscribed chan struct{}
	// unsubscribed receives once per cancelled subscription.
	unsubscribed chan struct{}
}

func newFakeRouter() *fakeRouter {
	return &fakeRouter{
		sources:      map[string][]config.Entrypoint{},
		policies:     map[string][]config.Policy{},
		breakers:     map[string]*status.BreakerStatus{},
		subscribed:   make(chan struct{}, 16),
		unsubscribed: make(chan struct{}, 16),
	}
}

func (f *fakeRouter) Update(u config.SourceUpdate) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sources[u.Source] = u.Entrypoints
	f.policies[u.Source] = u.Policies
	f.updates = append(f.updates, u)
}

// Policies merges every source's policies as the router does.
func (f *fakeRouter) Policies() []config.Policy {
	f.mu.Lock()
	defer f.mu.Unlock()
	var all []config.Policy
	for _, src := range slices.Sorted(maps.Keys(f.policies)) {
		all = append(all, f.policies[src]...)
	}
	set, _ := config.NewPolicySet(all)
	out := []config.Policy{}
	for _, name := range set.Names() {
		p, _ := set.Get(name)
		out = append(out, p)
	}
	return out
}

// Patch applies the change to the source's set and records the result
// as the complete update the router would now hold, sorted by id.
func (f *fakeRouter) Patch(p config.SourcePatch) {
	f.mu.Lock()
	defer f.mu.Unlock()
	byID := map[string]config.Entrypoint{}
	for _, ep := range f.sources[p.Source] {
		byID[ep.ID] = ep
	}
	for _, id := range p.Delete {
		delete(byID, id)
	}
	for _, ep := range p.Put {
		byID[ep.ID] = ep
	}
	eps := make([]config.Entrypoint, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		eps = append(eps, byID[id])
	}
	f.sources[p.Source] = eps
	f.updates = append(f.updates, config.SourceUpdate{Source: p.Source, Entrypoints: eps, Diagnostics: p.Diagnostics})
}

func (f *fakeRouter) lastUpdate() (config.SourceUpdate, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.updates) == 0 {
		return config.SourceUpdate{}, 0
	}
	return f.updates[len(f.updates)-1], len(f.updates)
}

func (f *fakeRouter) Entrypoints() []status.EntrypointStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []status.EntrypointStatus
	for _, src := range []string{config.SourceAPI, config.SourceDocker} {
		for _, ep := range f.sources[src] {
			out = append(out, status.EntrypointStatus{Entrypoint: ep, Backends: []status.BackendStatus{}})
		}
	}
	return out
}

func (f *fakeRouter) Entrypoint(id string) (status.EntrypointStatus, bool) {
	for _, st := range f.Entrypoints() {
		if st.Entrypoint.ID == id {
			return st, true
		}
	}
	return status.EntrypointStatus{}, false
}

func (f *fakeRouter) Diagnostics() []diagnostics.Diagnostic {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]diagnostics.Diagnostic(nil), f.diags...)
}

func (f *fakeRouter) Breakers() []status.BreakerStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	names := make([]string, 0, len(f.breakers))
	for n := range f.breakers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []status.BreakerStatus
	for _, n := range names {
		out = append(out, *f.breakers[n])
	}
	return out
}

func (f *fakeRouter) History() status.History {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := status.History{IntervalSeconds: 5, Samples: 60, Breakers: []status.BreakerHistory{}}
	for _, b := range f.breakers {
		out.Breakers = append(out.Breakers, status.BreakerHistory{Route: b.Route, Name: b.Name, Points: f.points[b.Route]})
	}
	return out
}

func (f *fakeRouter) Traffic() status.Traffic { return status.Traffic{Routes: []status.RouteTraffic{}} }

func (f *fakeRouter) RouteTraffic(id string) (status.RouteTraffic, bool) {
	return status.RouteTraffic{Route: id}, false
}

func (f *fakeRouter) RecentEvents() status.RecentEvents { return status.RecentEvents{Size: 0} }

func (f *fakeRouter) Breaker(route string) (status.BreakerStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.breakers[route]
	if !ok {
		return status.BreakerStatus{}, false
	}
	return *b, true
}

func (f *fakeRouter) ControlBreaker(route, action, who string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.breakers[route]
	if !ok {
		return fmt.Errorf("route %q: %w", route, status.ErrNotFound)
	}
	if f.controlErr != nil {
		return f.controlErr
	}
	switch action {
	case "open":
		b.State = "open"
	case "close", "reset":
		b.State = "closed"
	default:
		return fmt.Errorf("unknown action %q", action)
	}
	f.controls = append(f.controls, route+" "+action+" "+who)
	return nil
}

func (f *fakeRouter) SubscribeAfter(buffer int, lastID string) (<-chan status.Event, []status.Event, func()) {
	ch := make(chan status.Event, buffer)
	f.mu.Lock()
	f.subs = append(f.subs, ch)
	f.mu.Unlock()
	f.subscribed <- struct{}{}
	var once sync.Once
	return ch, nil, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			for i, c := range f.subs {
				if c == ch {
					f.subs = append(f.subs[:i], f.subs[i+1:]...)
					close(ch)
					break
				}
			}
			f.unsubscribed <- struct{}{}
		})
	}
}

func (f *fakeRouter) publish(e status.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.subs {
		select {
		case c <- e:
		default:
		}
	}
}

// fakePayload is the subset of the payload the fake codec understands.
type fakePayload struct {
	Name     string           `json:"name" yaml:"name"`
	Protocol string           `json:"protocol" yaml:"protocol"`
	Backends []config.Backend `json:"backends" yaml:"backends"`
	Config   struct {
		Hostnames      []string `json:"hostnames" yaml:"hostnames"`
		Path           string   `json:"path,omitempty" yaml:"path"`
		CircuitBreaker *struct {
			Threshold    *float64 `json:"threshold,omitempty" yaml:"threshold"`
			MinRequests  int      `json:"min_requests,omitempty" yaml:"min_requests"`
			CooldownSecs int      `json:"cooldown_secs,omitempty" yaml:"cooldown_secs"`
		} `json:"circuit_breaker,omitempty" yaml:"circuit_breaker"`
	} `json:"config" yaml:"config"`
}

var fakeName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// fakeCodec is a small stand-in for config.DecodeEntrypoint: it knows the
// top-level shape, hostnames, path and three breaker fields, reports
// unknown top-level fields as W013, a bad threshold as W024 and no backends
// as W034, and refuses
// what the real one refuses structurally (400 malformed, 422 invalid).
func fakeCodec() Codec {
	return Codec{Decode: fakeDecode, Encode: fakeEncode}
}

func fakeDecode(format config.Format, body []byte, src diagnostics.Source) (config.Entrypoint, []diagnostics.Diagnostic, error) {
	var raw map[string]any
	var p fakePayload
	var err error
	if format == config.FormatYAML {
		if err = yaml.Unmarshal(body, &raw); err == nil {
			err = yaml.Unmarshal(body, &p)
		}
	} else {
		if err = json.Unmarshal(body, &raw); err == nil {
			err = json.Unmarshal(body, &p)
		}
	}
	if err != nil {
		return config.Entrypoint{}, nil, &config.InputError{Status: 400, Message: "malformed payload: " + err.Error()}
	}
	if raw == nil {
		return config.Entrypoint{}, nil, &config.InputError{Status: 400, Message: "payload is not an object"}
	}
	if !fakeName.MatchString(p.Name) {
		return config.Entrypoint{}, nil, &config.InputError{Status: 422, Message: fmt.Sprintf("bad name %q", p.Name)}
	}
	if len(p.Config.Hostnames) == 0 {
		return config.Entrypoint{}, nil, &config.InputError{Status: 422, Message: "config.hostnames is required",
			Diagnostics: []diagnostics.Diagnostic{{Code: diagnostics.MissingHost, Severity: diagnostics.Error, Source: src, Key: "config.hostnames", Message: "no hostnames"}}}
	}
	if p.Protocol != "" && !strings.EqualFold(p.Protocol, "http") {
		return config.Entrypoint{}, nil, &config.InputError{Status: 422, Message: fmt.Sprintf("protocol %q is not supported", p.Protocol)}
	}
	var ds []diagnostics.Diagnostic
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "name", "protocol", "backends", "config":
		default:
			ds = append(ds, diagnostics.Diagnostic{Code: diagnostics.UnknownKey, Severity: diagnostics.Warn, Source: src, Key: k, Message: "unknown field"})
		}
	}
	if len(p.Backends) == 0 {
		ds = append(ds, diagnostics.Diagnostic{Code: diagnostics.NoBackends, Severity: diagnostics.Warn, Source: src,
			Key: "backends", Message: "no backends: answers 503 until some are given"})
	}
	ep := config.Entrypoint{ID: p.Name, Name: p.Name, Source: config.SourceAPI, Protocol: config.ProtocolHTTP,
		Hosts: p.Config.Hostnames, Path: p.Config.Path, Backends: p.Backends}
	if ep.Path == "" {
		ep.Path = "/"
	}
	if cb := p.Config.CircuitBreaker; cb != nil {
		ep.CircuitBreaker = &config.CircuitBreaker{ResponseCode: 503}
		ep.CircuitBreaker.Params.Threshold = 0.5
		if cb.Threshold != nil {
			if *cb.Threshold > 0 && *cb.Threshold <= 1 {
				ep.CircuitBreaker.Params.Threshold = *cb.Threshold
			} else {
				ds = append(ds, diagnostics.Diagnostic{Code: diagnostics.BadCircuitBreaker, Severity: diagnostics.Warn, Source: src,
					Key: "config.circuit_breaker.threshold", Value: fmt.Sprint(*cb.Threshold), Fallback: "0.5", Message: "threshold out of range"})
			}
		}
		ep.CircuitBreaker.Params.MinRequests = cb.MinRequests
		ep.CircuitBreaker.Params.Cooldown = time.Duration(cb.CooldownSecs) * time.Second
	}
	return ep, ds, nil
}

func fakeEncode(ep config.Entrypoint) ([]byte, error) {
	var p fakePayload
	p.Name, p.Protocol, p.Backends = ep.Name, "Http", ep.Backends
	if p.Backends == nil {
		p.Backends = []config.Backend{}
	}
	p.Config.Hostnames, p.Config.Path = ep.Hosts, ep.Path
	if cb := ep.CircuitBreaker; cb != nil {
		th := cb.Params.Threshold
		p.Config.CircuitBreaker = &struct {
			Threshold    *float64 `json:"threshold,omitempty" yaml:"threshold"`
			MinRequests  int      `json:"min_requests,omitempty" yaml:"min_requests"`
			CooldownSecs int      `json:"cooldown_secs,omitempty" yaml:"cooldown_secs"`
		}{&th, cb.Params.MinRequests, int(cb.Params.Cooldown / time.Second)}
	}
	return json.Marshal(p)
}

// harness is a Server on a fake router and codec with a store in a temp dir.
type harness struct {
	t      testing.TB
	srv    *Server
	store  *Store
	router *fakeRouter
	path   string
	logs   *syncBuffer
}

type harnessOption func(*Options)

func withTokens(admin, read string) harnessOption {
	return func(o *Options) { o.AdminToken, o.ReadToken = admin, read }
}

func newHarness(t testing.TB, opts ...harnessOption) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.json")
	return newHarnessAt(t, path, opts...)
}

func newHarnessAt(t testing.TB, path string, opts ...harnessOption) *harness {
	t.Helper()
	fr := newFakeRouter()
	st, err := OpenStore(StoreOptions{Path: path, Codec: fakeCodec(), Sink: fr,
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	logs := &syncBuffer{}
	// httptest.NewRequest's Host is example.com.
	o := Options{Router: fr, Store: st, Codec: fakeCodec(), Gatherer: prometheus.NewRegistry(),
		Logger: zerolog.New(logs), Hosts: []string{"example.com"}}
	for _, opt := range opts {
		opt(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{t: t, srv: srv, store: st, router: fr, path: path, logs: logs}
}

// do sends a request through the handler and returns the recorder.
func (h *harness) do(method, target, contentType, body string, header ...string) *httptest.ResponseRecorder {
	h.t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	return rec
}

func (h *harness) post(body string) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.do("POST", "/entrypoints", "application/json", body)
}

// decodeBody parses a JSON response body into a generic map.
func decodeBody(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("response body is not a JSON object: %v\n%s", err, rec.Body.String())
	}
	return m
}

// wantStatus fails unless rec has the status; error bodies must have the
// error shape.
func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body: %s", rec.Code, status, rec.Body.String())
	}
	if status >= 400 {
		wantErrorBody(t, rec)
	}
}

func wantErrorBody(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q, want application/json; body: %s", ct, rec.Body.String())
	}
	m := decodeBody(t, rec)
	if msg, ok := m["error"].(string); !ok || msg == "" {
		t.Fatalf("error body without a message: %s", rec.Body.String())
	}
	if _, ok := m["diagnostics"].([]any); !ok {
		t.Fatalf("error body without a diagnostics list: %s", rec.Body.String())
	}
}

func diagCodes(t *testing.T, m map[string]any) []string {
	t.Helper()
	list, ok := m["diagnostics"].([]any)
	if !ok {
		t.Fatalf("no diagnostics list in %v", m)
	}
	var out []string
	for _, d := range list {
		out = append(out, d.(map[string]any)["code"].(string))
	}
	return out
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer = logbuf.Buffer

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

var _ http.Handler = (*Server)(nil)

func newRequest(method, target string) *http.Request {
	return httptest.NewRequest(method, target, nil)
}
