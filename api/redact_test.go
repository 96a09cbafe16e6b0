package api

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/api/store"
	"github.com/levee-proxy/levee/router/config"
)

// Two bcrypt hashes (cost 4) of "pa" and "pb".
const (
	aliceLine = "alice:$2a$04$Zjn3LZUgYlVdNrDSqKrJF.mwdtAD4Lk0ot6fLFbPmRo0u53ZQDkEm"
	bobLine   = "bob:$2a$04$JZ5rtyOCHMYfcGCqH1L3We/zjjrt2S9ycRfW52jPaQoysWDyeTNg6"
)

func authPayload(name string, users ...string) string {
	u, _ := json.Marshal(users)
	return `{"name":"` + name + `","protocol":"Http","backends":[{"address":"10.0.0.5","port":8080,"weight":100}],
		"config":{"hostnames":["` + name + `.example.com"],"basic_auth":{"users":` + string(u) + `,"realm":"r"}}}`
}

// noHash fails when an answer holds a bcrypt hash.
func noHash(t *testing.T, what string, body []byte) {
	t.Helper()
	if strings.Contains(string(body), "$2a$") || strings.Contains(string(body), "$2y$") || strings.Contains(string(body), "$2b$") {
		t.Errorf("%s shows a password hash: %s", what, body)
	}
}

func storedUsers(t *testing.T, h *realHarness, id string) []string {
	t.Helper()
	return mustGet(t, h.store, id).Entrypoint.Access.BasicAuth.Users
}

// No answer shows a stored password hash: not the write's own answer, not
// GET of one or all entrypoints (API or another source's), not the bulk
// answers.
func TestPasswordHashesNeverShown(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	rec := h.post(authPayload("app", aliceLine, bobLine))
	wantStatus(t, rec, http.StatusCreated)
	noHash(t, "POST answer", rec.Body.Bytes())
	if !strings.Contains(rec.Body.String(), `"alice:`+RedactedHash+`"`) {
		t.Errorf("POST answer does not name the users: %s", rec.Body)
	}
	// Another source's entrypoint (labels) is shown redacted too.
	docker := config.DefaultEntrypoint()
	docker.ID, docker.Name, docker.Source, docker.Hosts = "labelled", "labelled", config.SourceDocker, []string{"l.example.com"}
	docker.Backends = []config.Backend{{Address: "10.0.0.6", Port: 80, Weight: config.DefaultWeight}}
	docker.Access.BasicAuth = &config.BasicAuth{Users: []string{aliceLine}, Realm: "r"}
	h.rt.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{docker}})

	for _, target := range []string{"/entrypoints", "/entrypoints/app", "/entrypoints/labelled", "/entrypoints?limit=1"} {
		rec := h.do("GET", target, "", "")
		wantStatus(t, rec, http.StatusOK)
		noHash(t, "GET "+target, rec.Body.Bytes())
	}
	rec = h.do("POST", "/entrypoints/bulk?dry_run=true", "application/json",
		`{"operations":[{"op":"create","entrypoint":`+authPayload("other", aliceLine)+`}]}`)
	wantStatus(t, rec, http.StatusOK)
	noHash(t, "bulk answer", rec.Body.Bytes())
	rec = h.do("PUT", "/entrypoints?dry_run=true", "application/json", `{"entrypoints":[`+authPayload("app", aliceLine, bobLine)+`]}`)
	wantStatus(t, rec, http.StatusOK)
	noHash(t, "set answer", rec.Body.Bytes())
	// The state file keeps them.
	state, _ := os.ReadFile(h.path) // the snapshot, once compacted
	log, _ := os.ReadFile(store.LogPath(h.path))
	if !strings.Contains(string(state)+string(log), aliceLine[len("alice:"):]) {
		t.Error("the stored hash is not on disk")
	}
}

// GET, change, PUT back: the placeholders keep the stored hashes, and the
// stored entrypoint is what it was but for the change.
func TestRedactedPayloadRoundTripKeepsHashes(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(authPayload("app", aliceLine, bobLine)), http.StatusCreated)
	var view struct {
		Payload map[string]any `json:"payload"`
	}
	if err := json.Unmarshal(h.do("GET", "/entrypoints/app", "", "").Body.Bytes(), &view); err != nil {
		t.Fatal(err)
	}
	cfg := view.Payload["config"].(map[string]any)
	cfg["hostnames"] = []string{"app.example.com", "www.example.com"}
	edited, _ := json.Marshal(view.Payload)
	rec := h.do("PUT", "/entrypoints/app", "application/json", string(edited))
	wantStatus(t, rec, http.StatusOK)
	noHash(t, "PUT answer", rec.Body.Bytes())
	if codes := diagCodes(t, decodeBody(t, rec)); len(codes) != 0 {
		t.Errorf("PUT of the redacted payload gave diagnostics %v", codes)
	}
	if got := storedUsers(t, h, "app"); !slices.Equal(got, []string{aliceLine, bobLine}) {
		t.Fatalf("stored users after the round trip %q", got)
	}
	if got := mustGet(t, h.store, "app").Entrypoint.Hosts; len(got) != 2 {
		t.Errorf("the change was not stored: hosts %q", got)
	}

	// YAML, a bulk replace and the whole set keep them the same way; a
	// line with a real hash replaces the stored one; the order of the
	// lines does not matter.
	yaml := "name: app\nprotocol: Http\nbackends: [{address: 10.0.0.5, port: 8080, weight: 100}]\nconfig:\n  hostnames: [app.example.com]\n  basic_auth:\n    users: [\"bob:" + RedactedHash + "\", \"alice:" + RedactedHash + "\"]\n    realm: r\n"
	wantStatus(t, h.do("PUT", "/entrypoints/app", "application/yaml", yaml), http.StatusOK)
	if got := storedUsers(t, h, "app"); !slices.Equal(got, []string{bobLine, aliceLine}) {
		t.Fatalf("after YAML: %q", got)
	}
	newBob := "bob:$2a$04$hGAXyfdavV9LyBEsY8tY4OjtmkTsyZZW7pRIv5CDg/9eV3g5UPJmq"
	wantStatus(t, h.do("POST", "/entrypoints/bulk", "application/json",
		`{"operations":[{"op":"replace","entrypoint":`+authPayload("app", "alice:"+RedactedHash, newBob)+`}]}`), http.StatusOK)
	if got := storedUsers(t, h, "app"); !slices.Equal(got, []string{aliceLine, newBob}) {
		t.Fatalf("after bulk: %q", got)
	}
	rec = h.do("PUT", "/entrypoints", "application/json", `{"entrypoints":[`+authPayload("app", "alice:"+RedactedHash, "bob:"+RedactedHash)+`]}`)
	wantStatus(t, rec, http.StatusOK)
	if got := storedUsers(t, h, "app"); !slices.Equal(got, []string{aliceLine, newBob}) {
		t.Fatalf("after set: %q", got)
	}
	if !strings.Contains(rec.Body.String(), `"op":"unchanged"`) {
		t.Errorf("the same set with placeholders is not unchanged: %s", rec.Body)
	}
}

// A placeholder with no stored hash to stand for is refused: nothing is
// stored that would lock the user out or deny the route.
func TestRedactedPlaceholderWithoutStoredHashRefused(t *testing.T) {
	h := newRealHarness(t, filepath.Join(t.TempDir(), "state.json"))
	wantStatus(t, h.post(authPayload("app", aliceLine)), http.StatusCreated)
	for _, c := range []struct{ method, target, body string }{
		{"POST", "/entrypoints", authPayload("fresh", "alice:"+RedactedHash)},
		{"PUT", "/entrypoints/app", authPayload("app", "alice:"+RedactedHash, "carol:"+RedactedHash)},
		{"PUT", "/entrypoints/app", authPayload("app", RedactedHash)},
	} {
		rec := h.do(c.method, c.target, "application/json", c.body)
		wantStatus(t, rec, http.StatusUnprocessableEntity)
		if !strings.Contains(rec.Body.String(), "stores none") && !strings.Contains(rec.Body.String(), "without a user name") {
			t.Errorf("%s %s: %s", c.method, c.target, rec.Body)
		}
	}
	rec := h.do("POST", "/entrypoints/bulk", "application/json",
		`{"operations":[{"op":"create","entrypoint":`+authPayload("fresh", "alice:"+RedactedHash)+`}]}`)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if _, ok := h.store.Get("fresh"); ok {
		t.Error("an entrypoint with an unrestorable placeholder was stored")
	}
	if got := storedUsers(t, h, "app"); !slices.Equal(got, []string{aliceLine}) {
		t.Fatalf("stored users changed: %q", got)
	}
}
