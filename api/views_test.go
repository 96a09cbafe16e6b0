package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// labelRoute decodes labels as the Docker provider does and returns the
// entrypoint it would hand the router.
func labelRoute(t *testing.T, fields map[string]string) config.Entrypoint {
	t.Helper()
	lc, _ := config.DecodeLabels(fields, diagnostics.Source{Provider: config.SourceDocker, ObjectName: "web"},
		func(f string) string { return "levee.http.web." + f })
	if !lc.Routable {
		t.Fatalf("labels %v not routable", fields)
	}
	ep := lc.Entrypoint
	ep.ID, ep.Name, ep.Source = "web", "web", config.SourceDocker
	ep.Created = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ep.Backends = []config.Backend{{Address: "172.18.0.3", Port: 8080, Weight: 100, Name: "web-1"}}
	return ep
}

// A route built from labels shows its effective config in the payload's
// own shape: every breaker and passive-health parameter, durations as Go
// duration strings, adjusted values as adjusted.
func TestViewOfLabelRouteIsThePayloadShape(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	ep := labelRoute(t, map[string]string{
		"host": "web.example.com", "backendTimeout": "15s",
		"circuitBreaker.threshold": "0.3", "circuitBreaker.window": "30s",
		"healthCheck.path": "/healthz", "healthCheck.interval": "3s",
		"passiveHealth.maxEjectedShare": "0.3",
	})
	h.rt.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{ep}})

	rec := h.do(http.MethodGet, "/entrypoints/web", "", "")
	wantStatus(t, rec, http.StatusOK)
	var got struct {
		Entrypoint json.RawMessage `json:"entrypoint"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	const want = `{"name":"web","protocol":"Http",` +
		`"backends":[{"address":"172.18.0.3","port":8080,"weight":100,"name":"web-1"}],` +
		`"config":{"hostnames":["web.example.com"],"path":"/","priority":0,"strip_prefix":false,` +
		`"load_balancer":"round_robin","backend_timeout":"15s","retry":{"attempts":1},` +
		// The 5s default timeout runs shortened to 2s against the 3s
		// interval (I004): the view shows the value in force.
		`"health_check":{"path":"/healthz","status":"200-399","timeout":"2s","interval":"3s","rise":2,"fall":3},` +
		`"passive_health":{"consecutive_failures":5,"eject_time":"10s","max_eject_time":"5m0s","max_ejected_share":0.3},` +
		`"circuit_breaker":{"threshold":0.3,"min_requests":20,"window":"30s","consecutive_failures":0,` +
		`"slow_call_duration":"0s","slow_call_threshold":0,"cooldown":"10s","max_cooldown":"10s",` +
		`"half_open_probes":1,"successes_to_close":1,"probe_timeout":"10s","failure_statuses":"500-599",` +
		`"cooldown_jitter":0,"recovery_duration":"0s","mode":"enforce",` +
		`"response_code":503,"response_body":"upstream circuit open","scope":"route",` +
		`"fallback":"","fallback_status":0,"serve_stale":"0s","serve_stale_for_credentials":false}},` +
		`"created":"2026-01-02T03:04:05Z"}`
	if string(got.Entrypoint) != want {
		t.Errorf("entrypoint view:\n got %s\nwant %s", got.Entrypoint, want)
	}
}

// durationKey names a field whose value is a length of time.
var durationKey = regexp.MustCompile(`(timeout|interval|cooldown|window|duration|_time)$`)

// walkDurations fails on any field named like a duration whose value is a
// number: durations are Go duration strings in every view.
func walkDurations(t *testing.T, path string, v any) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, isNum := e.(float64); isNum && durationKey.MatchString(k) {
				t.Errorf("%s.%s = %v: a duration as a number", path, k, e)
			}
			walkDurations(t, path+"."+k, e)
		}
	case []any:
		for _, e := range x {
			walkDurations(t, path+"[]", e)
		}
	}
}

// Every view of label and API routes alike: no duration as a number.
func TestViewsShowDurationsAsStrings(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	ep := labelRoute(t, map[string]string{"host": "web.example.com", "circuitBreaker.cooldown": "20",
		"healthCheck.interval": "3s"})
	h.rt.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{ep}})
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	for _, target := range []string{"/entrypoints", "/entrypoints/web", "/entrypoints/app", "/breakers", "/diagnostics"} {
		rec := h.do(http.MethodGet, target, "", "")
		wantStatus(t, rec, http.StatusOK)
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		walkDurations(t, target, v)
	}
}

// An API route whose health-check timeout Levee shortens shows the
// effective timeout in the answer to POST, in GET's entrypoint and in the
// stored payload, with I004.
func TestViewOfAdjustedHealthTimeout(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	rec := h.post(`{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],
	  "config":{"hostnames":["app.example.com"],"health_check":{"timeout":"5s","interval":"3s"}}}`)
	wantStatus(t, rec, http.StatusCreated)
	if codes := diagCodes(t, decodeBody(t, rec)); len(codes) != 1 || codes[0] != string(diagnostics.HealthTimeoutAdjusted) {
		t.Fatalf("diagnostics %v, want [I004]", codes)
	}
	rec = h.do(http.MethodGet, "/entrypoints/app", "", "")
	wantStatus(t, rec, http.StatusOK)
	var got struct {
		Entrypoint, Payload struct {
			Config struct {
				HealthCheck struct{ Timeout string } `json:"health_check"`
			}
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if a, b := got.Entrypoint.Config.HealthCheck.Timeout, got.Payload.Config.HealthCheck.Timeout; a != "2s" || b != "2s" {
		t.Errorf("timeout in entrypoint %q, in payload %q; want 2s in both", a, b)
	}
}

// A payload stored by an earlier version (no passive_health, a timeout
// longer than the interval) is shown after a restart as this version
// runs it: re-encoded from what the validator made of it.
func TestStoredPayloadShownAsInForceAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	old := `{"version":1,"entrypoints":[{"id":"app","created":"2026-01-01T00:00:00Z","payload":` +
		`{"name":"app","protocol":"Http","backends":[{"address":"10.0.0.5","port":8080,"weight":100}],` +
		`"config":{"hostnames":["app.example.com"],"health_check":{"timeout":"5s","interval":"3s"}}}}]}`
	if err := os.WriteFile(path, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newRealHarness(t, path)
	e, ok := h.store.Get("app")
	if !ok {
		t.Fatal("app not loaded")
	}
	for _, want := range []string{`"timeout":"2s","interval":"3s"`, `"passive_health":{"consecutive_failures":5,`} {
		if !strings.Contains(string(e.Payload), want) {
			t.Errorf("stored payload %s lacks %s", e.Payload, want)
		}
	}
}
