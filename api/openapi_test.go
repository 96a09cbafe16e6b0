package api

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestOpenAPICoversEveryRoute checks the served document against the mux:
// every registered pattern is documented with its path parameters and
// every status its handler is declared to answer, and nothing else is.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	h := newHarness(t)
	rec := h.do("GET", "/openapi.json", "", "")
	wantStatus(t, rec, 200)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.0") {
		t.Errorf("openapi %q, want 3.0.x", doc.OpenAPI)
	}
	documented := 0
	for _, ops := range doc.Paths {
		documented += len(ops)
	}
	if documented != len(h.srv.routes) {
		t.Errorf("%d documented operations, %d routes", documented, len(h.srv.routes))
	}
	for _, rt := range h.srv.routes {
		// The route is what the mux really serves.
		path := strings.NewReplacer("{id}", "x", "{route}", "x").Replace(rt.path)
		req := newRequest(rt.method, path)
		if _, pattern := h.srv.mux.Handler(req); pattern != rt.pattern() {
			t.Errorf("mux serves %s %s with %q, want %q", rt.method, path, pattern, rt.pattern())
		}
		raw, ok := doc.Paths[rt.path][strings.ToLower(rt.method)]
		if !ok {
			t.Errorf("%s is not in the OpenAPI document", rt.pattern())
			continue
		}
		var op struct {
			OperationID string                      `json:"operationId"`
			Parameters  []struct{ Name, In string } `json:"parameters"`
			Responses   map[string]json.RawMessage  `json:"responses"`
			RequestBody json.RawMessage             `json:"requestBody"`
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Fatal(err)
		}
		if op.OperationID == "" {
			t.Errorf("%s has no operationId", rt.pattern())
		}
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			found := false
			for _, p := range op.Parameters {
				found = found || (p.Name == m[1] && p.In == "path")
			}
			if !found {
				t.Errorf("%s does not document path parameter %s", rt.pattern(), m[1])
			}
		}
		for _, r := range rt.responses {
			if _, ok := op.Responses[strconv.Itoa(r.status)]; !ok {
				t.Errorf("%s does not document status %d", rt.pattern(), r.status)
			}
		}
		if rt.body != (op.RequestBody != nil) {
			t.Errorf("%s request body documented=%v, takes a body=%v", rt.pattern(), op.RequestBody != nil, rt.body)
		}
	}
}

// TestIssueEndpointsAreRegistered pins the endpoint list of issue 6, so a
// route cannot be dropped from the table (and the document) unnoticed.
func TestIssueEndpointsAreRegistered(t *testing.T) {
	want := []string{
		"GET /health", "GET /ready", "GET /entrypoints", "GET /entrypoints/{id}", "POST /entrypoints",
		"PUT /entrypoints/{id}", "DELETE /entrypoints/{id}", "GET /diagnostics", "GET /breakers",
		"GET /breakers/{route}", "POST /breakers/{route}/open", "POST /breakers/{route}/close",
		"POST /breakers/{route}/reset", "GET /events", "GET /metrics", "GET /openapi.json",
	}
	h := newHarness(t)
	have := map[string]bool{}
	for _, rt := range h.srv.routes {
		have[rt.pattern()] = true
	}
	for _, p := range want {
		if !have[p] {
			t.Errorf("%s is not registered", p)
		}
	}
	if len(have) != len(want) {
		t.Errorf("%d routes registered, issue lists %d", len(have), len(want))
	}
}
