package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/status"
)

func TestHealth(t *testing.T) {
	h := newHarness(t, withTokens("adm", "rd"))
	rec := h.do("GET", "/health", "", "")
	wantStatus(t, rec, 200)
	if decodeBody(t, rec)["status"] != "ok" {
		t.Errorf("health body %s", rec.Body)
	}
}

func TestReady(t *testing.T) {
	var synced atomic.Bool
	h := newHarness(t, func(o *Options) {
		o.Ready = []ReadyCheck{{Name: "docker", Ready: synced.Load}, {Name: "always", Ready: func() bool { return true }}}
	})
	rec := h.do("GET", "/ready", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	m := decodeBody(t, rec)
	if p := m["pending"].([]any); len(p) != 1 || p[0] != "docker" {
		t.Errorf("pending %v, want [docker]", p)
	}
	synced.Store(true)
	rec = h.do("GET", "/ready", "", "")
	wantStatus(t, rec, http.StatusOK)
	if decodeBody(t, rec)["ready"] != true {
		t.Errorf("ready body %s", rec.Body)
	}
}

// /ready lists every provider with its connection; a provider that lost
// its source after its first sync stays ready (its routes keep serving)
// and says so.
func TestReadyShowsProviderConnections(t *testing.T) {
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var conn atomic.Pointer[Connection]
	conn.Store(&Connection{State: "connecting", Since: since})
	var synced atomic.Bool
	h := newHarness(t, func(o *Options) {
		o.Ready = []ReadyCheck{
			{Name: "docker", Ready: synced.Load, Connection: func() Connection { return *conn.Load() }},
			{Name: "always", Ready: func() bool { return true }},
		}
	})
	rec := h.do("GET", "/ready", "", "")
	wantStatus(t, rec, http.StatusServiceUnavailable)
	want := `"providers":[{"name":"docker","ready":false,"state":"connecting","since":"2026-01-02T03:04:05Z","reconnects":0},{"name":"always","ready":true}]`
	if !strings.Contains(rec.Body.String(), want) {
		t.Errorf("body %s\nwant it to contain %s", rec.Body, want)
	}

	synced.Store(true)
	conn.Store(&Connection{State: "disconnected", Since: since, Error: "ping the engine at tcp://10.0.0.1:2375: no answer within 10s", Reconnects: 3})
	rec = h.do("GET", "/ready", "", "")
	wantStatus(t, rec, http.StatusOK)
	want = `"providers":[{"name":"docker","ready":true,"state":"disconnected","since":"2026-01-02T03:04:05Z","error":"ping the engine at tcp://10.0.0.1:2375: no answer within 10s","reconnects":3},{"name":"always","ready":true}]`
	if !strings.Contains(rec.Body.String(), want) {
		t.Errorf("body %s\nwant it to contain %s", rec.Body, want)
	}
}

func TestMetricsServesTheInjectedGatherer(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "levee_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	h := newHarness(t, func(o *Options) { o.Gatherer = reg })
	rec := h.do("GET", "/metrics", "", "")
	wantStatus(t, rec, 200)
	if !strings.Contains(rec.Body.String(), "levee_test_total 3") {
		t.Errorf("metrics body lacks the injected counter:\n%s", rec.Body)
	}
}

func TestDiagnosticsGroupedWithTotalsAndFilters(t *testing.T) {
	h := newHarness(t)
	web := diagnostics.Source{Provider: "docker", ObjectID: "c1", ObjectName: "web-1"}
	app := diagnostics.Source{Provider: "api", ObjectID: "app", ObjectName: "app"}
	h.router.diags = []diagnostics.Diagnostic{
		{Code: diagnostics.BadCircuitBreaker, Severity: diagnostics.Warn, Source: web, Message: "a"},
		{Code: diagnostics.PortDefaulted, Severity: diagnostics.Info, Source: web, Message: "b"},
		{Code: diagnostics.MissingHost, Severity: diagnostics.Error, Source: app, Message: "c"},
		{Code: diagnostics.BadCircuitBreaker, Severity: diagnostics.Warn, Source: app, Message: "d"},
	}
	rec := h.do("GET", "/diagnostics", "", "")
	wantStatus(t, rec, 200)
	m := decodeBody(t, rec)
	totals := m["totals"].(map[string]any)
	if totals["all"] != 4.0 || totals["warn"] != 2.0 || totals["error"] != 1.0 || totals["info"] != 1.0 {
		t.Errorf("totals %v", totals)
	}
	if m["by_code"].(map[string]any)["W024"] != 2.0 {
		t.Errorf("by_code %v", m["by_code"])
	}
	objs := m["objects"].([]any)
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2: %s", len(objs), rec.Body)
	}
	first := objs[0].(map[string]any)
	if first["provider"] != "api" || first["object"] != "app" || len(first["diagnostics"].([]any)) != 2 {
		t.Errorf("first group %v, want api/app with 2 diagnostics", first)
	}

	filtered := decodeBody(t, h.do("GET", "/diagnostics?severity=warn&code=w024", "", ""))
	if filtered["totals"].(map[string]any)["all"] != 2.0 {
		t.Errorf("severity+code filter: %v", filtered["totals"])
	}
	multi := decodeBody(t, h.do("GET", "/diagnostics?severity=error,info", "", ""))
	if multi["totals"].(map[string]any)["all"] != 2.0 {
		t.Errorf("comma filter: %v", multi["totals"])
	}
	none := decodeBody(t, h.do("GET", "/diagnostics?code=W001", "", ""))
	if len(none["objects"].([]any)) != 0 {
		t.Errorf("filter matching nothing: %v", none)
	}

	wantStatus(t, h.do("GET", "/diagnostics?severity=loud", "", ""), 400)
	wantStatus(t, h.do("GET", "/diagnostics?code=X999", "", ""), 400)
}

func TestBreakers(t *testing.T) {
	h := newHarness(t, withTokens("adm", "rd"))
	h.router.breakers["app"] = &status.BreakerStatus{Route: "app", Name: "app", State: "closed"}
	auth := []string{"Authorization", "Bearer adm"}

	rec := h.do("GET", "/breakers", "", "", auth...)
	wantStatus(t, rec, 200)
	if n := len(decodeBody(t, rec)["breakers"].([]any)); n != 1 {
		t.Errorf("%d breakers, want 1", n)
	}
	rec = h.do("GET", "/breakers/app", "", "", auth...)
	wantStatus(t, rec, 200)
	if decodeBody(t, rec)["state"] != "closed" {
		t.Errorf("breaker %s", rec.Body)
	}
	wantStatus(t, h.do("GET", "/breakers/nope", "", "", auth...), 404)

	rec = h.do("POST", "/breakers/app/open", "", "", auth...)
	wantStatus(t, rec, 200)
	if decodeBody(t, rec)["state"] != "open" {
		t.Errorf("after open: %s", rec.Body)
	}
	wantStatus(t, h.do("POST", "/breakers/app/close", "", "", auth...), 200)
	wantStatus(t, h.do("POST", "/breakers/app/reset", "", "", auth...), 200)
	wantStatus(t, h.do("POST", "/breakers/nope/open", "", "", auth...), 404)
	wantStatus(t, h.do("POST", "/breakers/app/open", "", "", "Authorization", "Bearer rd"), 403)

	// A route that vanished between the check and the action is 404;
	// any other refusal is a bug (the router knows every action the API
	// sends): 500, never 409.
	h.router.controlErr = fmt.Errorf("gone: %w", status.ErrNotFound)
	wantStatus(t, h.do("POST", "/breakers/app/open", "", "", auth...), 404)
	h.router.controlErr = errors.New("refused")
	wantStatus(t, h.do("POST", "/breakers/app/open", "", "", auth...), 500)
	h.router.controlErr = nil

	want := []string{"app open admin@192.0.2.1:1234", "app close admin@192.0.2.1:1234", "app reset admin@192.0.2.1:1234"}
	if strings.Join(h.router.controls, "|") != strings.Join(want, "|") {
		t.Errorf("router controls %q, want %q", h.router.controls, want)
	}
	if !strings.Contains(h.logs.String(), `"level":"warn","route":"app","action":"open","who":"admin@192.0.2.1:1234"`) {
		t.Errorf("control not logged at warn with who: %s", h.logs)
	}
}

// TestEventsStream checks the SSE stream end to end over a real
// connection: it subscribes, relays a breaker transition pushed on the bus
// as "event: breaker" + one JSON data line, sends heartbeats, and
// unsubscribes when the client goes.
func TestEventsStream(t *testing.T) {
	fr := newFakeRouter()
	st, err := OpenStore(StoreOptions{Path: t.TempDir() + "/s.json", Codec: fakeCodec(), Sink: fr})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Router: fr, Store: st, Codec: fakeCodec(), Gatherer: prometheus.NewRegistry(),
		Logger: zerolog.Nop(), Heartbeat: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	waitFor(t, fr.subscribed, "subscription")

	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fr.publish(status.Event{Type: status.EventBreaker, Time: at, Data: status.BreakerEvent{Route: "app", Event: "opened", From: "closed", To: "open", Rule: "error_ratio", Generation: 1}})

	var event, data string
	sawHeartbeat := false
	deadline := time.After(10 * time.Second)
	for event == "" || data == "" || !sawHeartbeat {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stream ended early")
			}
			switch {
			case strings.HasPrefix(l, "event: "):
				event = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				data = strings.TrimPrefix(l, "data: ")
			case l == ": heartbeat":
				sawHeartbeat = true
			}
		case <-deadline:
			t.Fatalf("timed out: event %q, data %q, heartbeat %v", event, data, sawHeartbeat)
		}
	}
	if event != "breaker" {
		t.Errorf("event name %q, want breaker", event)
	}
	want := `{"type":"breaker","time":"2026-01-01T00:00:00Z","data":{"route":"app","event":"opened","from":"closed","to":"open","rule":"error_ratio","generation":1}}`
	if data != want {
		t.Errorf("data %s\nwant %s", data, want)
	}

	cancel() // the client goes
	waitFor(t, fr.unsubscribed, "unsubscribe after the client left")
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestWriteEventKeepsNameOnOneLine(t *testing.T) {
	var buf bytes.Buffer
	if err := writeEvent(&buf, status.Event{Type: "x\ndata: injected", Data: 1}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if len(lines) != 4 || lines[0] != "event: x data: injected" || !strings.HasPrefix(lines[1], "data: {") || lines[2] != "" || lines[3] != "" {
		t.Errorf("event type broke the framing: %q", lines)
	}
}
