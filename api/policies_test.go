package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

const policyHash = "admin:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC"

// PUT, GET, DELETE /policies: stored durably (a restart keeps them),
// handed to the router as the API's set, shown with the routes that use
// them and with hashes redacted; bad input is refused as an entrypoint's
// is.
func TestPoliciesCRUD(t *testing.T) {
	h := newHarness(t)
	web := config.DefaultEntrypoint()
	web.ID, web.Name, web.Source, web.Hosts, web.Policies = "web", "web", config.SourceDocker, []string{"web.test"}, []string{"office-only"}
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{web},
		Policies: []config.Policy{{Name: "from-labels", Source: config.SourceDocker, Transform: config.Transform{Compress: &config.Compress{Encodings: []string{"gzip"}}}}}})

	body := `{"name":"office-only","config":{"basic_auth":{"users":["` + strings.ReplaceAll(policyHash, "$", "$") + `"]},"ip_allow_list":{"source_range":"10.0.0.0/8"}}}`
	rec := h.do("PUT", "/policies/office-only", "application/json", body)
	if rec.Code != http.StatusCreated || rec.Header().Get("Location") != "/policies/office-only" {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "$2y$") {
		t.Errorf("the answer shows a hash: %s", rec.Body)
	}
	if u, _ := h.router.lastUpdate(); u.Source != config.SourceAPI || len(u.Policies) != 1 || u.Policies[0].Access.BasicAuth == nil {
		t.Fatalf("router got %+v", u)
	}
	rec = h.do("PUT", "/policies/office-only", "application/yaml", "name: office-only\nconfig:\n  ip_allow_list:\n    source_range: [192.168.0.0/16]\n  retry:\n    attempts: 3\n")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"W048"`) {
		t.Fatalf("replace with a non-policy field: %d %s", rec.Code, rec.Body)
	}

	rec = h.do("GET", "/policies", "", "")
	got := decodeBody(t, rec)["policies"].([]any)
	var names []string
	for _, p := range got {
		m := p.(map[string]any)
		names = append(names, m["name"].(string))
		if m["name"] == "office-only" {
			if routes := m["routes"].([]any); len(routes) != 1 || routes[0] != "web" {
				t.Errorf("office-only used by %v, want [web]", routes)
			}
		}
	}
	if !slices.Equal(names, []string{"from-labels", "office-only"}) {
		t.Errorf("GET /policies: %v", names)
	}
	if rec := h.do("GET", "/policies/office-only", "", ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "192.168.0.0/16") {
		t.Errorf("GET one: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/policies/nope", "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("GET unknown: %d", rec.Code)
	}

	for _, tc := range []struct {
		name, path, ct, body string
		want                 int
	}{
		{"bad name in the path", "/policies/Bad%20Name", "application/json", `{"name":"Bad Name"}`, http.StatusUnprocessableEntity},
		{"name mismatch", "/policies/a", "application/json", `{"name":"b","config":{}}`, http.StatusUnprocessableEntity},
		{"malformed JSON", "/policies/a", "application/json", `{"name":`, http.StatusBadRequest},
		{"not JSON or YAML", "/policies/a", "text/plain", `name: a`, http.StatusUnsupportedMediaType},
		{"empty body", "/policies/a", "application/json", ``, http.StatusBadRequest},
	} {
		if rec := h.do("PUT", tc.path, tc.ct, tc.body); rec.Code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, rec.Code, rec.Body, tc.want)
		}
	}

	// A restart keeps the policy as last replaced.
	h2 := newHarnessAt(t, h.path)
	if rec := h2.do("GET", "/policies/office-only", "", ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "192.168.0.0/16") {
		t.Fatalf("after a restart: %d %s", rec.Code, rec.Body)
	}
	if u, _ := h2.router.lastUpdate(); len(u.Policies) != 1 || u.Policies[0].Name != "office-only" {
		t.Fatalf("router after a restart got %+v", u.Policies)
	}

	h2.router.Update(config.SourceUpdate{Source: config.SourceDocker, Policies: []config.Policy{{Name: "from-labels", Source: config.SourceDocker}}})
	if rec := h2.do("DELETE", "/policies/from-labels", "", ""); rec.Code != http.StatusForbidden {
		t.Errorf("delete another source's policy: %d", rec.Code)
	}
	if rec := h2.do("DELETE", "/policies/office-only", "", ""); rec.Code != http.StatusNoContent {
		t.Fatalf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := h2.do("DELETE", "/policies/office-only", "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("delete again: %d", rec.Code)
	}
	if h3 := newHarnessAt(t, h.path); h3.do("GET", "/policies/office-only", "", "").Code != http.StatusNotFound {
		t.Errorf("deleted policy came back after a restart")
	}
}

// A policy read with GET (hashes redacted) and sent back keeps its stored
// hashes; ?dry_run stores nothing; ?strict refuses a policy with warnings.
func TestPolicyWriteModesAndRedaction(t *testing.T) {
	h := newHarness(t)
	body := `{"name":"auth","config":{"basic_auth":{"users":["` + policyHash + `"]}}}`
	if rec := h.do("PUT", "/policies/auth?dry_run=true", "application/json", body); rec.Code != http.StatusCreated || rec.Header().Get("Location") != "" {
		t.Fatalf("dry run: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if _, ok := h.store.Policy("auth"); ok {
		t.Fatal("a dry run stored the policy")
	}
	if rec := h.do("PUT", "/policies/auth", "application/json", body); rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	shown := decodeBody(t, h.do("GET", "/policies/auth", "", ""))["policy"]
	back, err := json.Marshal(shown)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(back), RedactedHash) {
		t.Fatalf("GET shows %s, want the hash redacted", back)
	}
	if rec := h.do("PUT", "/policies/auth", "application/json", string(back)); rec.Code != http.StatusOK {
		t.Fatalf("PUT of what GET showed: %d %s", rec.Code, rec.Body)
	}
	if e, _ := h.store.Policy("auth"); !slices.Equal(e.Policy.Access.BasicAuth.Users, []string{policyHash}) {
		t.Fatalf("stored users %v, want the original hash", e.Policy.Access.BasicAuth.Users)
	}
	unknown := `{"name":"other","config":{"basic_auth":{"users":["bob:` + RedactedHash + `"]}}}`
	if rec := h.do("PUT", "/policies/other", "application/json", unknown); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("a placeholder with no stored hash: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("PUT", "/policies/auth?strict=true", "application/json", `{"name":"auth","config":{"retry":{"attempts":2}}}`); rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "W048") {
		t.Errorf("strict with W048: %d %s", rec.Code, rec.Body)
	}
}

// GET /policies says which policies make their routes deny: one whose
// access settings could not be read (here an unknown key; W039 leaves the
// same mark) denies, a readable one does not.
func TestPolicyViewSaysWhenItDenies(t *testing.T) {
	h := newHarness(t)
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Policies: []config.Policy{
		{Name: "broken", Source: config.SourceDocker, Access: config.AccessPolicies{Unread: []string{"ipAllowList.sourceRnage"}}},
		{Name: "fine", Source: config.SourceDocker, Transform: config.Transform{Compress: &config.Compress{Encodings: []string{"gzip"}}}},
	}})
	denies := map[string]any{}
	for _, p := range decodeBody(t, h.do("GET", "/policies", "", ""))["policies"].([]any) {
		m := p.(map[string]any)
		denies[m["name"].(string)] = m["denies"]
	}
	if denies["broken"] != true || denies["fine"] != false {
		t.Errorf("denies %v, want broken: true, fine: false", denies)
	}
}
