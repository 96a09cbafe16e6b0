package api

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
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
		if takes := rt.body || rt.bodySchema != ""; takes != (op.RequestBody != nil) {
			t.Errorf("%s request body documented=%v, takes a body=%v", rt.pattern(), op.RequestBody != nil, takes)
		}
	}
}

// TestIssueEndpointsAreRegistered pins the API's endpoint list, so a
// route cannot be dropped from the table (and the document) unnoticed.
func TestIssueEndpointsAreRegistered(t *testing.T) {
	want := []string{
		"GET /health", "GET /ready", "GET /session", "GET /diagnostics/catalogue", "GET /entrypoints", "GET /entrypoints/{id}", "POST /entrypoints",
		"PUT /entrypoints/{id}", "DELETE /entrypoints/{id}", "GET /diagnostics", "GET /breakers",
		"GET /breakers/{route}", "POST /breakers/{route}/open", "POST /breakers/{route}/close",
		"POST /breakers/{route}/reset", "GET /history", "GET /events", "GET /metrics", "GET /openapi.json",
		"GET /certificates",
		// bulk writes
		"POST /entrypoints/bulk", "PUT /entrypoints",
		// named policies
		"GET /policies", "GET /policies/{name}", "PUT /policies/{name}", "DELETE /policies/{name}",
		// traffic and recent events
		"GET /traffic", "GET /traffic/{route}", "GET /events/recent",
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

// TestDocsTableMatchesOpenAPI pins docs/api.md's endpoint table to the
// statuses the OpenAPI document gives each operation (401 and 403 aside:
// the table leaves the authentication answers to the text below it), and
// the breaker actions to exactly what their handler can answer.
func TestDocsTableMatchesOpenAPI(t *testing.T) {
	h := newHarness(t)
	rec := h.do("GET", "/openapi.json", "", "")
	wantStatus(t, rec, 200)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	documented := func(method, path string) []string {
		var out []string
		for code := range doc.Paths[path][strings.ToLower(method)].Responses {
			out = append(out, code)
		}
		slices.Sort(out)
		return out
	}
	withoutAuth := func(codes []string) []string {
		return slices.DeleteFunc(slices.Clone(codes), func(c string) bool { return c == "401" || c == "403" })
	}

	// Each operation documents exactly the statuses its route declares.
	for _, rt := range h.srv.routes {
		var declared []string
		for _, r := range rt.responses {
			declared = append(declared, strconv.Itoa(r.status))
		}
		slices.Sort(declared)
		declared = slices.Compact(declared)
		if got := documented(rt.method, rt.path); !slices.Equal(got, declared) {
			t.Errorf("%s: OpenAPI responses %v, route declares %v", rt.pattern(), got, declared)
		}
	}

	// The breaker actions: 200, 404, 500 (a router refusal is a bug), and
	// the admin routes' 401 and 403; never 409.
	for _, action := range []string{"open", "close", "reset"} {
		got := documented("POST", "/breakers/{route}/"+action)
		if want := []string{"200", "401", "403", "404", "500"}; !slices.Equal(got, want) {
			t.Errorf("POST /breakers/{route}/%s: OpenAPI responses %v, want %v", action, got, want)
		}
	}

	// docs/api.md's table row of every operation, status for status.
	md, err := os.ReadFile("../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("^\\| `([A-Z]+) (/[^`]*)` \\|.*\\| ([0-9, ]+) \\|$")
	rows := 0
	for _, line := range strings.Split(string(md), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		if _, ok := doc.Paths[m[2]][strings.ToLower(m[1])]; !ok {
			t.Errorf("docs/api.md lists %s %s, the OpenAPI document does not", m[1], m[2])
			continue
		}
		table := strings.Split(strings.ReplaceAll(m[3], " ", ""), ",")
		slices.Sort(table)
		want := withoutAuth(documented(m[1], m[2]))
		if !slices.Equal(withoutAuth(table), want) {
			t.Errorf("docs/api.md: %s %s answers %v, the OpenAPI document %v (401 and 403 aside)", m[1], m[2], table, want)
		}
	}
	if rows != len(h.srv.routes) {
		t.Errorf("docs/api.md's table has %d rows, %d routes are registered", rows, len(h.srv.routes))
	}
}
