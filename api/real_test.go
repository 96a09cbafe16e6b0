package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// These tests run the API on the real validator (StandardCodec) and the
// real router runtime, as cmd/levee wires them.

type realHarness struct {
	*harness
	rt  *router.Router
	reg *prometheus.Registry
}

func newRealHarness(t testing.TB, path string) *realHarness {
	t.Helper()
	reg := prometheus.NewRegistry()
	// The API reads and controls the router; no request is proxied here,
	// so the request path (router/proxy) is not wired.
	rt := router.New(router.Options{Logger: zerolog.Nop(), Registerer: reg})
	t.Cleanup(rt.Close)
	st, err := OpenStore(StoreOptions{Path: path, Codec: StandardCodec(), Sink: rt})
	if err != nil {
		t.Fatalf("OpenStore: %v", err)
	}
	logs := &syncBuffer{}
	srv, err := New(Options{Router: rt, Store: st, Codec: StandardCodec(), Gatherer: reg, Logger: zerolog.New(logs),
		Heartbeat: time.Hour, Hosts: []string{"example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	return &realHarness{harness: &harness{t: t, srv: srv, store: st, path: path, logs: logs}, rt: rt, reg: reg}
}

func TestRealSeedPayloadAsWritten(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	rec := h.post(seedPayload)
	wantStatus(t, rec, http.StatusCreated)
	m := decodeBody(t, rec)
	if codes := diagCodes(t, m); len(codes) != 0 {
		t.Errorf("the seed payload gave diagnostics %v", codes)
	}
	cb := m["config"].(map[string]any)["circuit_breaker"].(map[string]any)
	if cb["threshold"] != 0.5 || cb["min_requests"] != 20.0 || cb["cooldown"] != "10s" {
		t.Errorf("stored breaker %v, want threshold 0.5, min_requests 20, cooldown 10s", cb)
	}
	if m["created"] == nil {
		t.Error("stored entrypoint has no created time")
	}

	// The router routes it, owned by the api source, with its breaker.
	rec = h.do("GET", "/entrypoints/app", "", "")
	wantStatus(t, rec, http.StatusOK)
	var view struct {
		ID, Source string
		status.EntrypointStatus
		Payload json.RawMessage
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &view); err != nil {
		t.Fatal(err)
	}
	if view.ID != "app" || view.Source != config.SourceAPI || len(view.Backends) != 1 || len(view.Breakers) != 1 {
		t.Errorf("GET view %s, want id app, source api, 1 backend, 1 breaker", rec.Body)
	}
	wantStatus(t, h.do("GET", "/breakers/app", "", ""), http.StatusOK)

	// The payload GET shows goes back through PUT unchanged.
	if string(view.Payload) != string(mustGet(t, h.store, "app").Payload) {
		t.Fatalf("GET payload %s differs from the stored one", view.Payload)
	}
	rec = h.do("PUT", "/entrypoints/app", "application/json", string(view.Payload))
	wantStatus(t, rec, http.StatusOK)
	if codes := diagCodes(t, decodeBody(t, rec)); len(codes) != 0 {
		t.Errorf("PUT of the GET payload gave diagnostics %v", codes)
	}
	if string(mustGet(t, h.store, "app").Payload) != string(view.Payload) {
		t.Error("PUT of the unchanged payload changed the stored payload")
	}

	// Reload on the real codec: same entrypoint.
	h2 := newRealHarness(t, h.path)
	got, want := mustGet(t, h2.store, "app"), mustGet(t, h.store, "app")
	if string(got.Payload) != string(want.Payload) {
		t.Errorf("payload after reload\n%s\nwant\n%s", got.Payload, want.Payload)
	}
	if !got.Entrypoint.Created.Equal(want.Entrypoint.Created) {
		t.Error("created time changed over a reload")
	}
}

func TestRealYAMLAndAbbreviatedForm(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	rec := h.do("POST", "/entrypoints", "application/yaml", "name: app\nconfig:\n  hostnames: [app.example.com]\n")
	wantStatus(t, rec, http.StatusCreated)
	if codes := diagCodes(t, decodeBody(t, rec)); !contains(codes, string(diagnostics.NoBackends)) {
		t.Errorf("no-backends form diagnostics %v, want %s", codes, diagnostics.NoBackends)
	}
}

// TestRealBadBreakerFieldsFallBack sends an ill-typed value for every
// breaker field of the config table: each is accepted (201) with W024 keyed
// by its JSON path and a fallback.
func TestRealBadBreakerFieldsFallBack(t *testing.T) {
	for _, f := range config.Fields() {
		if f.Code != diagnostics.BadCircuitBreaker || !strings.HasPrefix(f.JSON, "config.circuit_breaker.") {
			continue
		}
		t.Run(f.JSON, func(t *testing.T) {
			h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
			key := strings.TrimPrefix(f.JSON, "config.circuit_breaker.")
			body := `{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],"config":{"hostnames":["app.example.com"],` +
				`"circuit_breaker":{"` + key + `":{"not":"valid"}}}}`
			rec := h.post(body)
			wantStatus(t, rec, http.StatusCreated)
			found := false
			for _, d := range decodeBody(t, rec)["diagnostics"].([]any) {
				d := d.(map[string]any)
				if d["code"] == string(diagnostics.BadCircuitBreaker) && d["key"] == f.JSON {
					found = true
				}
			}
			if !found {
				t.Errorf("no W024 keyed %s in %s", f.JSON, rec.Body)
			}
		})
	}
}

func TestRealUnknownFieldAndStructuralErrors(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	rec := h.post(`{"name":"app","config":{"hostnames":["a.example"],"circuit_breaker":{"treshold":0.4}}}`)
	wantStatus(t, rec, http.StatusCreated)
	if codes := diagCodes(t, decodeBody(t, rec)); !contains(codes, string(diagnostics.UnknownKey)) {
		t.Errorf("typo gave %v, want W013", codes)
	}
	wantStatus(t, h.post(`{"name":"b","config":{}}`), http.StatusUnprocessableEntity)
	wantStatus(t, h.post(`{"name":"B!","config":{"hostnames":["a"]}}`), http.StatusUnprocessableEntity)
	wantStatus(t, h.post(`{"name":"c","protocol":"Tcp","config":{"hostnames":["a"]}}`), http.StatusUnprocessableEntity)
	wantStatus(t, h.post(`{"name":`), http.StatusBadRequest)
}

// TestRealEventsCarryABreakerTransition forces a breaker open through the
// API and reads the transition from /events.
func TestRealEventsCarryABreakerTransition(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	ts := httptest.NewServer(h.srv)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	// The opening comment arrives after Subscribe: from here on no event
	// can be missed.
	if !sc.Scan() || sc.Text() != ": subscribed" {
		t.Fatalf("stream opened with %q", sc.Text())
	}
	wantStatus(t, h.do("POST", "/breakers/app/open", "", ""), http.StatusOK)

	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(10 * time.Second)
	event := ""
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stream ended")
			}
			if strings.HasPrefix(l, "event: ") {
				event = strings.TrimPrefix(l, "event: ")
				continue
			}
			if event != status.EventBreaker || !strings.HasPrefix(l, "data: ") {
				continue
			}
			var ev struct {
				Data status.BreakerEvent `json:"data"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(l, "data: ")), &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Data.Route == "app" && ev.Data.To == "open" && ev.Data.Rule == "manual" {
				return
			}
		case <-deadline:
			t.Fatal("no breaker transition on /events")
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// GET /history serves the router's samples of every breaker, oldest first,
// with the sampling interval.
func TestRealHistory(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	h.rt.SampleHistory()
	rec := h.do(http.MethodGet, "/history", "", "")
	wantStatus(t, rec, http.StatusOK)
	var got status.History
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.IntervalSeconds != router.DefaultHistoryInterval.Seconds() || got.Samples != router.DefaultHistorySamples {
		t.Errorf("interval %v s, %d samples; want the router's defaults", got.IntervalSeconds, got.Samples)
	}
	if len(got.Breakers) != 1 || got.Breakers[0].Route != "app" || len(got.Breakers[0].Points) != 1 {
		t.Fatalf("history = %+v, want one point for app", got)
	}
	if p := got.Breakers[0].Points[0]; p.Requests != 0 || p.Failures != 0 || p.Time.IsZero() {
		t.Errorf("point = %+v, want 0 requests, 0 failures, a time", p)
	}
}
