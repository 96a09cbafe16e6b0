package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

func TestCreateSeedPayloadAsWritten(t *testing.T) {
	h := newHarness(t)
	rec := h.post(seedPayload)
	wantStatus(t, rec, http.StatusCreated)
	if loc := rec.Header().Get("Location"); loc != "/entrypoints/app" {
		t.Errorf("Location %q, want /entrypoints/app", loc)
	}
	m := decodeBody(t, rec)
	if m["name"] != "app" {
		t.Errorf("stored name %v, want app", m["name"])
	}
	if codes := diagCodes(t, m); len(codes) != 0 {
		t.Errorf("seed payload gave diagnostics %v, want none", codes)
	}
	// The body is the canonical payload plus diagnostics.
	delete(m, "diagnostics")
	canon, _ := fakeEncode(mustGet(t, h.store, "app").Entrypoint)
	var want map[string]any
	json.Unmarshal(canon, &want)
	if got, _ := json.Marshal(m); string(got) != mustMarshal(want) {
		t.Errorf("body %s, want canonical %s", got, canon)
	}
	// The router heard the full API set.
	u, _ := h.router.lastUpdate()
	if u.Source != config.SourceAPI || len(u.Entrypoints) != 1 || u.Entrypoints[0].ID != "app" || u.Entrypoints[0].Source != config.SourceAPI {
		t.Fatalf("router update %+v, want the api source with app", u)
	}
	if u.Entrypoints[0].Created.IsZero() {
		t.Error("created time not stamped")
	}
	// And it is visible through GET.
	wantStatus(t, h.do("GET", "/entrypoints/app", "", ""), http.StatusOK)
	list := decodeBody(t, h.do("GET", "/entrypoints", "", ""))
	if n := len(list["entrypoints"].([]any)); n != 1 {
		t.Errorf("GET /entrypoints lists %d, want 1", n)
	}
}

func mustGet(t *testing.T, s *Store, id string) Entry {
	t.Helper()
	e, ok := s.Get(id)
	if !ok {
		t.Fatalf("store has no %q", id)
	}
	return e
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCreateYAML(t *testing.T) {
	for _, ct := range []string{"application/yaml", "application/x-yaml", "text/yaml", "application/yaml; charset=utf-8"} {
		t.Run(ct, func(t *testing.T) {
			h := newHarness(t)
			body := "name: app\nconfig:\n  hostnames: [app.example.com]\n  circuit_breaker:\n    threshold: 0.3\n"
			rec := h.do("POST", "/entrypoints", ct, body)
			wantStatus(t, rec, http.StatusCreated)
			e := mustGet(t, h.store, "app")
			if e.Entrypoint.CircuitBreaker == nil || e.Entrypoint.CircuitBreaker.Params.Threshold != 0.3 {
				t.Fatalf("YAML threshold not decoded: %+v", e.Entrypoint.CircuitBreaker)
			}
			// Stored as canonical JSON, whatever the input format.
			if !json.Valid(e.Payload) {
				t.Fatalf("stored payload is not JSON: %s", e.Payload)
			}
		})
	}
}

func TestCreateJSONWithCharset(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.do("POST", "/entrypoints", "application/json; charset=utf-8", seedPayload), http.StatusCreated)
}

func TestCreateFieldFallbackReportsDiagnostics(t *testing.T) {
	h := newHarness(t)
	rec := h.post(`{"name":"app","backends":[{"address":"10.0.0.5","port":80}],"config":{"hostnames":["a.example"],"circuit_breaker":{"threshold":7}},"colour":"red"}`)
	wantStatus(t, rec, http.StatusCreated)
	m := decodeBody(t, rec)
	codes := diagCodes(t, m)
	if !slices.Contains(codes, "W024") || !slices.Contains(codes, "W013") {
		t.Fatalf("diagnostics %v, want W024 and W013", codes)
	}
	for _, d := range m["diagnostics"].([]any) {
		src := d.(map[string]any)["source"].(map[string]any)
		if src["provider"] != "api" || src["object"] != "app" || src["object_id"] != "app" {
			t.Errorf("diagnostic source %v does not name the api entrypoint", src)
		}
	}
	// The router receives the diagnostics with the set.
	u, _ := h.router.lastUpdate()
	if len(u.Diagnostics) != 2 {
		t.Errorf("router got %d diagnostics, want 2", len(u.Diagnostics))
	}
}

func TestCreateErrors(t *testing.T) {
	big := `{"name":"app","config":{"hostnames":["a.example"]},"pad":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	cases := []struct {
		name, ct, body string
		status         int
	}{
		{"malformed JSON", "application/json", `{"name":`, 400},
		{"not an object", "application/json", `[1,2]`, 400},
		{"empty body", "application/json", ``, 400},
		{"malformed YAML", "application/yaml", "name: [unclosed", 400},
		{"no hostnames", "application/json", `{"name":"app","config":{}}`, 422},
		{"bad name", "application/json", `{"name":"App/1","config":{"hostnames":["a"]}}`, 422},
		{"unsupported protocol", "application/json", `{"name":"app","protocol":"Tcp","config":{"hostnames":["a"]}}`, 422},
		{"no content type", "", seedPayload, 415},
		{"text/plain", "text/plain", seedPayload, 415},
		{"form", "application/x-www-form-urlencoded", seedPayload, 415},
		{"bad media type", "application/json; =", seedPayload, 415},
		{"too large", "application/json", big, 413},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			rec := h.do("POST", "/entrypoints", c.ct, c.body)
			wantStatus(t, rec, c.status)
			if len(h.store.List()) != 0 {
				t.Error("a refused payload was stored")
			}
		})
	}
}

func TestTooLargeWithoutContentLength(t *testing.T) {
	h := newHarness(t)
	body := `{"name":"app","pad":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	req, _ := http.NewRequest("POST", "/entrypoints", strings.NewReader(body))
	req.ContentLength = -1 // chunked: only the reader limit can catch it
	req.Host = "127.0.0.1:3035"
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.srv.ServeHTTP(rec, req)
	wantStatus(t, rec, http.StatusRequestEntityTooLarge)
}

func TestInputErrorDiagnosticsReturned(t *testing.T) {
	h := newHarness(t)
	rec := h.post(`{"name":"app","config":{}}`)
	wantStatus(t, rec, 422)
	if codes := diagCodes(t, decodeBody(t, rec)); !slices.Equal(codes, []string{"E002"}) {
		t.Errorf("diagnostics %v, want [E002]", codes)
	}
}

func TestCreateConflicts(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	wantStatus(t, h.post(seedPayload), http.StatusConflict)

	// An id owned by another source conflicts too.
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{{ID: "web", Name: "web", Source: config.SourceDocker}}})
	rec := h.post(`{"name":"web","config":{"hostnames":["web.example"]}}`)
	wantStatus(t, rec, http.StatusConflict)
	if !strings.Contains(decodeBody(t, rec)["error"].(string), "docker") {
		t.Errorf("409 does not say which source owns it: %s", rec.Body)
	}
}

func TestReplace(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	created := mustGet(t, h.store, "app").Entrypoint.Created

	rec := h.do("PUT", "/entrypoints/app", "application/json", `{"name":"app","config":{"hostnames":["new.example"]}}`)
	wantStatus(t, rec, http.StatusOK)
	if m := decodeBody(t, rec); m["config"].(map[string]any)["hostnames"].([]any)[0] != "new.example" {
		t.Errorf("PUT answer does not show the new entrypoint: %s", rec.Body)
	}
	e := mustGet(t, h.store, "app")
	if e.Entrypoint.Hosts[0] != "new.example" {
		t.Errorf("store hosts %v after PUT", e.Entrypoint.Hosts)
	}
	if !e.Entrypoint.Created.Equal(created) {
		t.Error("PUT changed the creation time (collision order)")
	}
	u, _ := h.router.lastUpdate()
	if u.Entrypoints[0].Hosts[0] != "new.example" {
		t.Error("router not told about the replacement")
	}
}

func TestReplaceErrors(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{{ID: "web", Name: "web", Source: config.SourceDocker}}})

	wantStatus(t, h.do("PUT", "/entrypoints/web", "application/json", `{"name":"web","config":{"hostnames":["w"]}}`), http.StatusForbidden)
	wantStatus(t, h.do("PUT", "/entrypoints/nope", "application/json", `{"name":"nope","config":{"hostnames":["w"]}}`), http.StatusNotFound)
	wantStatus(t, h.do("PUT", "/entrypoints/app", "application/json", `{"name":"other","config":{"hostnames":["w"]}}`), http.StatusUnprocessableEntity)
	wantStatus(t, h.do("PUT", "/entrypoints/app", "text/plain", seedPayload), http.StatusUnsupportedMediaType)
	wantStatus(t, h.do("PUT", "/entrypoints/app", "application/json", `{`), http.StatusBadRequest)
	if mustGet(t, h.store, "app").Entrypoint.Hosts[0] != "app.example.com" {
		t.Error("a refused PUT changed the entrypoint")
	}
}

func TestDelete(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{{ID: "web", Name: "web", Source: config.SourceDocker}}})

	wantStatus(t, h.do("DELETE", "/entrypoints/web", "", ""), http.StatusForbidden)
	wantStatus(t, h.do("DELETE", "/entrypoints/nope", "", ""), http.StatusNotFound)
	rec := h.do("DELETE", "/entrypoints/app", "", "")
	wantStatus(t, rec, http.StatusNoContent)
	if rec.Body.Len() != 0 {
		t.Errorf("204 with a body: %q", rec.Body)
	}
	if _, ok := h.store.Get("app"); ok {
		t.Error("still stored after DELETE")
	}
	u, _ := h.router.lastUpdate()
	if u.Source != config.SourceAPI || len(u.Entrypoints) != 0 {
		t.Errorf("router update after delete %+v, want an empty api set", u)
	}
	wantStatus(t, h.do("DELETE", "/entrypoints/app", "", ""), http.StatusNotFound)
	wantStatus(t, h.do("GET", "/entrypoints/app", "", ""), http.StatusNotFound)
}

func TestChangesAreLoggedWithWho(t *testing.T) {
	h := newHarness(t, withTokens("adm", "rd"))
	rec := h.do("POST", "/entrypoints", "application/json", seedPayload, "Authorization", "Bearer adm")
	wantStatus(t, rec, http.StatusCreated)
	if !strings.Contains(h.logs.String(), `"who":"admin@192.0.2.1:1234"`) {
		t.Errorf("create not logged with who: %s", h.logs)
	}
}

func TestUnknownRouteAndMethodAreJSON(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.do("GET", "/nope", "", ""), http.StatusNotFound)
	rec := h.do("PATCH", "/entrypoints/app", "", "")
	wantStatus(t, rec, http.StatusMethodNotAllowed)
	if rec.Header().Get("Allow") == "" {
		t.Error("405 without Allow header")
	}
}

func TestGetShowsSourceAndAPIPayload(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{{ID: "web", Name: "web", Source: config.SourceDocker}}})

	list := decodeBody(t, h.do("GET", "/entrypoints", "", ""))["entrypoints"].([]any)
	if len(list) != 2 {
		t.Fatalf("%d entrypoints, want 2", len(list))
	}
	for _, v := range list {
		v := v.(map[string]any)
		switch v["id"] {
		case "app":
			p, ok := v["payload"].(map[string]any)
			if v["source"] != "api" || !ok || p["name"] != "app" {
				t.Errorf("api entrypoint view %v, want source api and its payload", v)
			}
		case "web":
			if _, has := v["payload"]; v["source"] != "docker" || has {
				t.Errorf("docker entrypoint view %v, want source docker and no payload", v)
			}
		default:
			t.Errorf("unexpected entrypoint %v", v["id"])
		}
		if _, ok := v["backends"]; !ok {
			t.Errorf("view %v lacks the router status", v)
		}
	}
}
