package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzCreate drives arbitrary bodies and content types through POST
// /entrypoints on the fake codec (the API's own request handling): the
// handler must never panic, must answer one of the statuses it documents,
// every error body must be the JSON error shape, and a 201 must be stored
// and echo valid JSON.
func FuzzCreate(f *testing.F) {
	fuzzCreate(f, newHarness(f))
}

// FuzzCreateStandard is FuzzCreate on the real validator and router.
func FuzzCreateStandard(f *testing.F) {
	fuzzCreate(f, newRealHarness(f, filepath.Join(f.TempDir(), "state.json")).harness)
}

// fuzzSlowInput is far above what any input should need, even on a loaded
// machine.
const fuzzSlowInput = 30 * time.Second

func fuzzCreate(f *testing.F, h *harness) {
	f.Add("application/json", seedPayload)
	f.Add("application/yaml", "name: app\nconfig:\n  hostnames: [a.example]\n")
	f.Add("application/json", `{"name":"app","config":{"hostnames":["a"],"circuit_breaker":{"threshold":-1}},"x":1}`)
	f.Add("application/json", `{"name":"","config":{"hostnames":[]}}`)
	f.Add("application/json", `{"name":"app","protocol":"Udp","config":{"hostnames":["a"]}}`)
	f.Add("application/json", `null`)
	f.Add("application/json", `"just a string"`)
	f.Add("application/yaml", "- a\n- b\n")
	f.Add("application/yaml", "name: &a app\nconfig: *a\n")
	f.Add("text/yaml; charset=utf-8", "{name: app, config: {hostnames: [a]}}")
	f.Add("text/plain", "hello")
	f.Add("", "")
	f.Add("application/json;;", "{}")
	allowed := map[int]bool{201: true, 400: true, 409: true, 413: true, 415: true, 422: true}
	f.Fuzz(func(t *testing.T, contentType, body string) {
		// A request that takes this long is a denial-of-service bug; a
		// panic from the timer kills the worker, which makes the fuzzer
		// keep the input.
		watchdog := time.AfterFunc(fuzzSlowInput, func() {
			panic(fmt.Sprintf("request took over %v: content type %q, body %q", fuzzSlowInput, contentType, body))
		})
		defer watchdog.Stop()
		req := httptest.NewRequest("POST", "/entrypoints", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, req)
		if !allowed[rec.Code] {
			t.Fatalf("status %d for %q %q: %s", rec.Code, contentType, body, rec.Body)
		}
		var m map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
			t.Fatalf("body is not a JSON object (status %d): %q", rec.Code, rec.Body)
		}
		if rec.Code >= 400 {
			if _, ok := m["error"].(string); !ok {
				t.Fatalf("error body without error: %s", rec.Body)
			}
			if _, ok := m["diagnostics"].([]any); !ok {
				t.Fatalf("error body without diagnostics: %s", rec.Body)
			}
			return
		}
		name, _ := m["name"].(string)
		if _, ok := h.store.Get(name); !ok {
			t.Fatalf("201 for %q but not stored", name)
		}
		// Free the id again so later inputs can create it.
		del := httptest.NewRecorder()
		h.srv.ServeHTTP(del, httptest.NewRequest("DELETE", "/entrypoints/"+name, nil))
		if del.Code != http.StatusNoContent {
			t.Fatalf("delete %q after create: %d", name, del.Code)
		}
	})
}
