package api

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Payloads for the fake codec: badThreshold gets W024 (threshold 7 falls
// back to 0.5) and W013 (field "extra"); clean gets nothing.
const (
	badThreshold = `{"name":"app","extra":1,"backends":[{"address":"10.0.0.5","port":8080}],
		"config":{"hostnames":["app.example.com"],"circuit_breaker":{"threshold":7}}}`
	cleanPayload = `{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],
		"config":{"hostnames":["app.example.com"],"circuit_breaker":{"threshold":0.25}}}`
)

// snapshot is everything a write may change: the state file (nil when
// absent), the store and the number of updates the router heard.
type snapshot struct {
	file    []byte
	entries []Entry
	updates int
}

func snap(t *testing.T, h *harness) snapshot {
	t.Helper()
	file, err := os.ReadFile(h.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	_, n := h.router.lastUpdate()
	return snapshot{file: file, entries: h.store.List(), updates: n}
}

// wantUnchanged fails if the state file, the store or the router moved
// since before.
func wantUnchanged(t *testing.T, h *harness, before snapshot) {
	t.Helper()
	after := snap(t, h)
	if string(after.file) != string(before.file) {
		t.Errorf("state file changed:\n%s\nwas:\n%s", after.file, before.file)
	}
	if !reflect.DeepEqual(after.entries, before.entries) {
		t.Errorf("store changed: %+v, was %+v", after.entries, before.entries)
	}
	if after.updates != before.updates {
		t.Errorf("router heard %d updates, had heard %d", after.updates, before.updates)
	}
}

func threshold(t *testing.T, m map[string]any) any {
	t.Helper()
	cfg, _ := m["config"].(map[string]any)
	cb, _ := cfg["circuit_breaker"].(map[string]any)
	if cb == nil {
		t.Fatalf("no config.circuit_breaker in %v", m)
	}
	return cb["threshold"]
}

func TestStrictRefusesWarningsAndStoresNothing(t *testing.T) {
	h := newHarness(t)
	// Another entrypoint first, so there is a state file to keep intact.
	wantStatus(t, h.post(`{"name":"other","config":{"hostnames":["other.example"]}}`), http.StatusCreated)
	before := snap(t, h)

	rec := h.do("POST", "/entrypoints?strict=true", "application/json", badThreshold)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	m := decodeBody(t, rec)
	if got, want := diagCodes(t, m), []string{"W013", "W024"}; !reflect.DeepEqual(got, want) {
		t.Errorf("422 lists %v, want %v", got, want)
	}
	if msg := m["error"].(string); !strings.Contains(msg, "strict") || !strings.Contains(msg, "config.circuit_breaker.threshold") {
		t.Errorf("error %q does not say strict refused it and why", msg)
	}
	wantUnchanged(t, h, before)
	wantStatus(t, h.do("GET", "/entrypoints/app", "", ""), http.StatusNotFound)

	// Without strict, the same payload is stored with its fallback (by
	// design, as for labels).
	rec = h.post(badThreshold)
	wantStatus(t, rec, http.StatusCreated)
	if got := threshold(t, decodeBody(t, rec)); got != 0.5 {
		t.Errorf("stored threshold %v, want the fallback 0.5", got)
	}
}

func TestStrictReplaceRefusesWarningsAndKeepsTheOldEntrypoint(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(cleanPayload), http.StatusCreated)
	before := snap(t, h)

	rec := h.do("PUT", "/entrypoints/app?strict=1", "application/json", badThreshold)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	wantUnchanged(t, h, before)
	if got := mustGet(t, h.store, "app").Entrypoint.CircuitBreaker.Params.Threshold; got != 0.25 {
		t.Errorf("threshold %v after a refused PUT, want 0.25", got)
	}
}

func TestStrictAcceptsACleanPayload(t *testing.T) {
	h := newHarness(t)
	rec := h.do("POST", "/entrypoints?strict=true", "application/json", cleanPayload)
	wantStatus(t, rec, http.StatusCreated)
	if loc := rec.Header().Get("Location"); loc != "/entrypoints/app" {
		t.Errorf("Location %q, want /entrypoints/app", loc)
	}
	if codes := diagCodes(t, decodeBody(t, rec)); len(codes) != 0 {
		t.Errorf("diagnostics %v, want none", codes)
	}
	mustGet(t, h.store, "app")
	wantStatus(t, h.do("GET", "/entrypoints/app", "", ""), http.StatusOK)

	rec = h.do("PUT", "/entrypoints/app?strict=true", "application/json", strings.Replace(cleanPayload, "0.25", "0.75", 1))
	wantStatus(t, rec, http.StatusOK)
	if got := mustGet(t, h.store, "app").Entrypoint.CircuitBreaker.Params.Threshold; got != 0.75 {
		t.Errorf("threshold %v after a clean strict PUT, want 0.75", got)
	}
	// strict=false is the default behaviour: warnings are stored.
	wantStatus(t, h.do("PUT", "/entrypoints/app?strict=false", "application/json", badThreshold), http.StatusOK)
}

func TestDryRunCreateStoresNothingAndShowsTheNormalisedEntrypoint(t *testing.T) {
	h := newHarness(t)
	before := snap(t, h)

	rec := h.do("POST", "/entrypoints?dry_run=true", "application/json", badThreshold)
	wantStatus(t, rec, http.StatusCreated)
	if loc := rec.Header().Get("Location"); loc != "" {
		t.Errorf("a dry run answered Location %q: nothing was created", loc)
	}
	m := decodeBody(t, rec)
	if m["name"] != "app" || threshold(t, m) != 0.5 {
		t.Errorf("dry run answer %s, want the normalised entrypoint (threshold 0.5)", rec.Body)
	}
	if got, want := diagCodes(t, m), []string{"W013", "W024"}; !reflect.DeepEqual(got, want) {
		t.Errorf("dry run diagnostics %v, want %v", got, want)
	}
	wantUnchanged(t, h, before)
	if before.file != nil {
		t.Fatal("the state file existed before the first write")
	}
	wantStatus(t, h.do("GET", "/entrypoints/app", "", ""), http.StatusNotFound)

	// The answer is the body a real write gives.
	real := h.post(badThreshold)
	wantStatus(t, real, http.StatusCreated)
	if real.Body.String() != rec.Body.String() {
		t.Errorf("dry run answered\n%s\nthe write answered\n%s", rec.Body, real.Body)
	}
}

func TestDryRunGivesTheStatusOfTheRealWrite(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(cleanPayload), http.StatusCreated)
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{{ID: "web", Name: "web", Source: config.SourceDocker}}})
	before := snap(t, h)

	for _, c := range []struct {
		method, target, body string
		want                 int
	}{
		{"POST", "/entrypoints?dry_run=true", cleanPayload, http.StatusConflict},
		{"POST", "/entrypoints?dry_run=true", `{"name":"web","config":{"hostnames":["w"]}}`, http.StatusConflict},
		{"POST", "/entrypoints?dry_run=true", `{"name":"x"}`, http.StatusUnprocessableEntity},
		{"PUT", "/entrypoints/nope?dry_run=true", `{"name":"nope","config":{"hostnames":["w"]}}`, http.StatusNotFound},
		{"PUT", "/entrypoints/web?dry_run=true", `{"name":"web","config":{"hostnames":["w"]}}`, http.StatusForbidden},
		{"PUT", "/entrypoints/app?dry_run=true", `{"name":"other","config":{"hostnames":["w"]}}`, http.StatusUnprocessableEntity},
	} {
		rec := h.do(c.method, c.target, "application/json", c.body)
		if rec.Code != c.want {
			t.Errorf("%s %s %s: %d, want %d (%s)", c.method, c.target, c.body, rec.Code, c.want, rec.Body)
		}
	}
	wantUnchanged(t, h, before)
}

func TestDryRunReplaceKeepsTheStoredEntrypoint(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(cleanPayload), http.StatusCreated)
	before := snap(t, h)

	rec := h.do("PUT", "/entrypoints/app?dry_run=yes", "application/json", badThreshold)
	wantStatus(t, rec, http.StatusOK)
	m := decodeBody(t, rec)
	if threshold(t, m) != 0.5 || !reflect.DeepEqual(diagCodes(t, m), []string{"W013", "W024"}) {
		t.Errorf("dry run PUT answered %s", rec.Body)
	}
	wantUnchanged(t, h, before)
	if got := mustGet(t, h.store, "app").Entrypoint.CircuitBreaker.Params.Threshold; got != 0.25 {
		t.Errorf("threshold %v after a dry run PUT, want 0.25", got)
	}
}

func TestDryRunWithStrict(t *testing.T) {
	h := newHarness(t)
	before := snap(t, h)

	rec := h.do("POST", "/entrypoints?dry_run=true&strict=true", "application/json", badThreshold)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if got, want := diagCodes(t, decodeBody(t, rec)), []string{"W013", "W024"}; !reflect.DeepEqual(got, want) {
		t.Errorf("422 lists %v, want %v", got, want)
	}
	wantUnchanged(t, h, before)

	rec = h.do("POST", "/entrypoints?strict=on&dry_run=on", "application/json", cleanPayload)
	wantStatus(t, rec, http.StatusCreated)
	if threshold(t, decodeBody(t, rec)) != 0.25 {
		t.Errorf("dry run answered %s", rec.Body)
	}
	wantUnchanged(t, h, before)
	wantStatus(t, h.do("GET", "/entrypoints/app", "", ""), http.StatusNotFound)
}

func TestWriteModeBadParameterIs400NamingIt(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(cleanPayload), http.StatusCreated)
	before := snap(t, h)

	for _, c := range []struct{ query, name string }{
		{"strict=maybe", "strict"},
		{"dry_run=perhaps", "dry_run"},
		{"strict=", "strict"},
		{"strict=true&strict=false", "strict"},
		{"dryrun=true", "dryrun"}, // a misspelt dry_run must not write
		{"strict=true&dry_run=2", "dry_run"},
	} {
		for _, req := range []struct{ method, target, body string }{
			{"POST", "/entrypoints?" + c.query, strings.Replace(cleanPayload, `"app"`, `"fresh"`, 1)},
			{"PUT", "/entrypoints/app?" + c.query, badThreshold},
		} {
			rec := h.do(req.method, req.target, "application/json", req.body)
			wantStatus(t, rec, http.StatusBadRequest)
			if msg := decodeBody(t, rec)["error"].(string); !strings.Contains(msg, c.name) {
				t.Errorf("%s %s: error %q does not name %s", req.method, req.target, msg, c.name)
			}
		}
	}
	wantUnchanged(t, h, before)
}

func TestParseWriteMode(t *testing.T) {
	for _, c := range []struct {
		query string
		want  writeMode
	}{
		{"", writeMode{}},
		{"strict=true", writeMode{strict: true}},
		{"dry_run=1", writeMode{dryRun: true}},
		{"strict=YES&dry_run=On", writeMode{strict: true, dryRun: true}},
		{"strict=false&dry_run=off", writeMode{}},
	} {
		got, err := parseWriteMode(c.query)
		if err != nil || got != c.want {
			t.Errorf("parseWriteMode(%q) = %+v, %v; want %+v", c.query, got, err, c.want)
		}
	}
	if _, err := parseWriteMode("strict=%zz"); err == nil {
		t.Error("a malformed query was accepted")
	}
}

// Error answers carry the diagnostics of this payload only, never those of
// other entrypoints or sources that the router also reports.
func TestErrorAnswersListOnlyThisPayloadsDiagnostics(t *testing.T) {
	h := newHarness(t)
	noisy := strings.Replace(badThreshold, `"app"`, `"noisy"`, 1)
	wantStatus(t, h.post(noisy), http.StatusCreated) // stored with W013 and W024
	h.router.mu.Lock()
	h.router.diags = []diagnostics.Diagnostic{{Code: diagnostics.BadPort, Severity: diagnostics.Warn,
		Source: diagnostics.Source{Provider: config.SourceDocker, ObjectName: "c-1"}, Key: "levee.http.web.port"}}
	h.router.mu.Unlock()

	for _, c := range []struct {
		name, target, body, object string
		status                     int
	}{
		{"strict", "/entrypoints?strict=true", badThreshold, "app", http.StatusUnprocessableEntity},
		{"conflict", "/entrypoints", noisy, "noisy", http.StatusConflict},
	} {
		rec := h.do("POST", c.target, "application/json", c.body)
		wantStatus(t, rec, c.status)
		list := decodeBody(t, rec)["diagnostics"].([]any)
		if len(list) != 2 {
			t.Errorf("%s: %d diagnostics, want this payload's 2: %s", c.name, len(list), rec.Body)
		}
		for _, d := range list {
			src := d.(map[string]any)["source"].(map[string]any)
			if src["provider"] != config.SourceAPI || src["object"] != c.object {
				t.Errorf("%s answer lists a diagnostic of another object: %v", c.name, d)
			}
		}
	}
}

func TestOpenAPIDocumentsTheWriteParameters(t *testing.T) {
	h := newHarness(t)
	doc := decodeBody(t, h.do("GET", "/openapi.json", "", ""))
	paths := doc["paths"].(map[string]any)
	for _, op := range []struct{ path, method string }{{"/entrypoints", "post"}, {"/entrypoints/{id}", "put"}} {
		o := paths[op.path].(map[string]any)[op.method].(map[string]any)
		found := map[string]string{}
		for _, p := range o["parameters"].([]any) {
			pm := p.(map[string]any)
			if pm["in"] == "query" {
				found[pm["name"].(string)] = pm["schema"].(map[string]any)["type"].(string)
			}
		}
		if want := map[string]string{paramStrict: "boolean", paramDryRun: "boolean"}; !reflect.DeepEqual(found, want) {
			t.Errorf("%s %s query parameters %v, want %v", op.method, op.path, found, want)
		}
	}
}

// The case on the real validator: threshold 7 falls back to 0.5
// with W024; strict refuses it, and info diagnostics (a defaulted port) do
// not block a strict write.
func TestRealStrictCatchesAFallback(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	payload := `{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],
		"config":{"hostnames":["app.example.com"],"circuit_breaker":{"threshold":7}}}`
	rec := h.do("POST", "/entrypoints?strict=true", "application/json", payload)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	list := decodeBody(t, rec)["diagnostics"].([]any)
	if len(list) != 1 {
		t.Fatalf("422 lists %v, want one W024", list)
	}
	d := list[0].(map[string]any)
	if d["code"] != "W024" || d["key"] != "config.circuit_breaker.threshold" || d["value"] != "7" || d["fallback"] != "0.5" {
		t.Errorf("422 diagnostic %v, want W024 on config.circuit_breaker.threshold=7 (using 0.5)", d)
	}
	if _, ok := h.rt.Entrypoint("app"); ok {
		t.Error("the router routes a payload strict refused")
	}
	if _, err := os.Stat(h.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state file written for a refused payload: %v", err)
	}

	infoOnly := `{"name":"app","backends":[{"address":"10.0.0.5"}],"config":{"hostnames":["app.example.com"]}}`
	rec = h.do("POST", "/entrypoints?strict=true", "application/json", infoOnly)
	wantStatus(t, rec, http.StatusCreated)
	if got := diagCodes(t, decodeBody(t, rec)); !reflect.DeepEqual(got, []string{"I002"}) {
		t.Errorf("diagnostics %v, want the info I002 only", got)
	}
}
