package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/api/store"
	"github.com/levee-proxy/levee/router/config"
)

func epJSON(name, host string, backends bool) string {
	b := ""
	if backends {
		b = `"backends":[{"address":"10.0.0.9","port":80,"weight":100}],`
	}
	return fmt.Sprintf(`{"name":%q,%s"config":{"hostnames":[%q]}}`, name, b, host)
}

func decodeBulk(t *testing.T, body string) bulkAnswer {
	t.Helper()
	var a bulkAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("answer is not a bulk answer: %v\n%s", err, body)
	}
	return a
}

func bulkBody(ops ...string) string { return `{"operations":[` + strings.Join(ops, ",") + `]}` }

func create(payload string) string { return `{"op":"create","entrypoint":` + payload + `}` }
func replace(payload string) string {
	return `{"op":"replace","entrypoint":` + payload + `}`
}
func del(id string) string { return `{"op":"delete","id":"` + id + `"}` }

// Creates, a replace and a delete in one request: one log record, one
// router update, each operation's status as its single write would give.
func TestBulkAppliesEverythingInOneWrite(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(epJSON("old", "old.example", true)), http.StatusCreated)
	wantStatus(t, h.post(epJSON("gone", "gone.example", true)), http.StatusCreated)
	_, updates := h.router.lastUpdate()
	rec := h.do("POST", "/entrypoints/bulk", "application/json", bulkBody(
		create(epJSON("a", "a.example", true)), create(epJSON("b", "b.example", false)),
		replace(epJSON("old", "new.example", true)), del("gone")))
	wantStatus(t, rec, http.StatusOK)
	a := decodeBulk(t, rec.Body.String())
	want := []struct {
		op     string
		id     string
		status int
		diags  int
	}{{"create", "a", 201, 0}, {"create", "b", 201, 1}, {"replace", "old", 200, 0}, {"delete", "gone", 204, 0}}
	if len(a.Results) != len(want) || a.Error != "" || a.DryRun {
		t.Fatalf("answer %+v", a)
	}
	for i, w := range want {
		r := a.Results[i]
		if r.Op != w.op || r.ID != w.id || r.Status != w.status || len(r.Diagnostics) != w.diags {
			t.Errorf("result %d = %+v, want %+v", i, r, w)
		}
	}
	if _, n := h.router.lastUpdate(); n != updates+1 {
		t.Errorf("router updates %d, want one more than %d: a bulk write is one update", n, updates)
	}
	recs, _, _, err := store.ReadLog(store.LogPath(h.path))
	if err != nil || len(recs) != 3 || len(recs[2].Put) != 3 || len(recs[2].Del) != 1 {
		t.Fatalf("log %+v (%v): want the bulk write as one record of 3 puts and 1 delete", recs, err)
	}
	if e := mustGet(t, h.store, "old"); e.Entrypoint.Hosts[0] != "new.example" {
		t.Error("replace not applied")
	}
	if _, ok := h.store.Get("gone"); ok {
		t.Error("delete not applied")
	}
}

// One bad operation refuses the whole request: 422, each operation's own
// status and error, nothing stored, the router untouched.
func TestBulkIsAllOrNothing(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(epJSON("taken", "t.example", true)), http.StatusCreated)
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{{ID: "docker-owned", Name: "docker-owned", Source: config.SourceDocker, Hosts: []string{"d.example"}}}})
	before := readFile(t, store.LogPath(h.path))
	_, updates := h.router.lastUpdate()
	rec := h.do("POST", "/entrypoints/bulk", "application/json", bulkBody(
		create(epJSON("fine", "f.example", true)),
		create(epJSON("taken", "t.example", true)),
		replace(epJSON("absent", "x.example", true)),
		del("nobody"),
		create(`{"name":"nohost","config":{}}`),
		create(epJSON("docker-owned", "d.example", true)),
		del("docker-owned"),
		create(epJSON("fine", "f2.example", true)),
		`{"op":"frobnicate","id":"x"}`))
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	a := decodeBulk(t, rec.Body.String())
	// Every operation says how it fares: the ones that would pass alone
	// too (fine: 201), the store's refusals (exists, absent, duplicate) and
	// the payload and ownership refusals.
	wantStatuses := []int{201, 409, 404, 404, 422, 409, 403, 409, 400}
	for i, w := range wantStatuses {
		if a.Results[i].Status != w {
			t.Errorf("operation %d (%s %s): status %d, want %d (%s)", i, a.Results[i].Op, a.Results[i].ID, a.Results[i].Status, w, a.Results[i].Error)
		}
	}
	if !strings.Contains(a.Error, "nothing stored") {
		t.Errorf("error %q", a.Error)
	}
	if len(a.Results[4].Diagnostics) == 0 {
		t.Error("the refused payload's diagnostics are not in its result")
	}
	// Now only the store's checks fail.
	rec = h.do("POST", "/entrypoints/bulk", "application/json", bulkBody(
		create(epJSON("fine", "f.example", true)),
		create(epJSON("taken", "t.example", true)),
		replace(epJSON("absent", "x.example", true)),
		del("nobody"),
		create(epJSON("fine", "f2.example", true))))
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	a = decodeBulk(t, rec.Body.String())
	for i, w := range []int{201, 409, 404, 404, 409} {
		if a.Results[i].Status != w {
			t.Errorf("store check %d (%s %s): status %d, want %d (%s)", i, a.Results[i].Op, a.Results[i].ID, a.Results[i].Status, w, a.Results[i].Error)
		}
	}
	if _, ok := h.store.Get("fine"); ok {
		t.Error("an operation of a refused batch was stored")
	}
	if _, n := h.router.lastUpdate(); n != updates {
		t.Error("the router heard of a refused batch")
	}
	if after := readFile(t, store.LogPath(h.path)); string(after) != string(before) {
		t.Error("a refused batch reached the log")
	}
}

// strict refuses a batch with any warning; dry_run answers as the write
// would and stores nothing; unknown parameters and non-JSON bodies are
// refused.
func TestBulkStrictAndDryRun(t *testing.T) {
	h := newHarness(t)
	body := bulkBody(create(epJSON("a", "a.example", true)), create(epJSON("b", "b.example", false)))
	rec := h.do("POST", "/entrypoints/bulk?strict=true", "application/json", body)
	wantStatus(t, rec, http.StatusUnprocessableEntity)
	if a := decodeBulk(t, rec.Body.String()); a.Results[1].Status != 422 || a.Results[0].Status != 201 {
		t.Fatalf("strict: %+v, want b refused for its W034", a.Results)
	}
	rec = h.do("POST", "/entrypoints/bulk?dry_run=true", "application/json", body)
	wantStatus(t, rec, http.StatusOK)
	if a := decodeBulk(t, rec.Body.String()); !a.DryRun || a.Results[0].Status != 201 || len(a.Results[0].Entrypoint) == 0 {
		t.Fatalf("dry run: %+v", a)
	}
	if len(h.store.List()) != 0 {
		t.Fatal("a dry run stored something")
	}
	wantStatus(t, h.do("POST", "/entrypoints/bulk?dryrun=true", "application/json", body), http.StatusBadRequest)
	wantStatus(t, h.do("POST", "/entrypoints/bulk", "application/yaml", body), http.StatusUnsupportedMediaType)
	wantStatus(t, h.do("POST", "/entrypoints/bulk", "application/json", `{"operations":`), http.StatusBadRequest)
}

// PUT /entrypoints makes the set exactly the one given: new ids created,
// changed ones replaced (keeping their creation time), identical ones
// untouched, missing ones deleted; all in one write.
func TestPutSetIsDeclarative(t *testing.T) {
	h := newHarness(t)
	for _, p := range []string{epJSON("keep", "k.example", true), epJSON("change", "c.example", true), epJSON("drop", "d.example", true)} {
		wantStatus(t, h.post(p), http.StatusCreated)
	}
	created := mustGet(t, h.store, "change").Entrypoint.Created
	set := `{"entrypoints":[` + strings.Join([]string{epJSON("keep", "k.example", true), epJSON("change", "c2.example", true), epJSON("new", "n.example", true)}, ",") + `]}`
	rec := h.do("PUT", "/entrypoints", "application/json", set)
	wantStatus(t, rec, http.StatusOK)
	got := map[string]string{}
	for _, r := range decodeBulk(t, rec.Body.String()).Results {
		got[r.ID] = fmt.Sprintf("%s %d", r.Op, r.Status)
	}
	want := map[string]string{"keep": "unchanged 200", "change": "replace 200", "new": "create 201", "drop": "delete 204"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	if e := mustGet(t, h.store, "change"); !e.Entrypoint.Created.Equal(created) || e.Entrypoint.Hosts[0] != "c2.example" {
		t.Errorf("replaced entry %+v: want the new host and the old creation time", e.Entrypoint)
	}
	if _, ok := h.store.Get("drop"); ok {
		t.Error("an id missing from the set was not deleted")
	}
	// The same set again changes nothing and writes nothing.
	before := readFile(t, store.LogPath(h.path))
	wantStatus(t, h.do("PUT", "/entrypoints", "application/json", set), http.StatusOK)
	if after := readFile(t, store.LogPath(h.path)); string(after) != string(before) {
		t.Error("an unchanged set was written")
	}
	// An id twice refuses the whole set.
	dup := `{"entrypoints":[` + epJSON("x", "x.example", true) + "," + epJSON("x", "y.example", true) + `]}`
	wantStatus(t, h.do("PUT", "/entrypoints", "application/json", dup), http.StatusUnprocessableEntity)
	if _, ok := h.store.Get("x"); ok {
		t.Error("a refused set was stored")
	}
	wantStatus(t, h.do("PUT", "/entrypoints", "application/json", `{}`), http.StatusBadRequest)
}

// GET /entrypoints pages by id with a cursor and filters by host and source.
func TestListPagesAndFilters(t *testing.T) {
	h := newHarness(t)
	for i := range 7 {
		wantStatus(t, h.post(epJSON(fmt.Sprintf("e%d", i), fmt.Sprintf("h%d.example", i%2), true)), http.StatusCreated)
	}
	h.router.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{{ID: "zdocker", Name: "zdocker", Source: config.SourceDocker, Hosts: []string{"z.example"}}}})
	var seen []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		rec := h.do("GET", "/entrypoints?limit=3&after="+after, "", "")
		wantStatus(t, rec, http.StatusOK)
		var l entrypointList
		if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		for _, v := range l.Entrypoints {
			seen = append(seen, v.ID)
		}
		if l.Next == "" {
			break
		}
		after = l.Next
	}
	if got := strings.Join(seen, ","); got != "e0,e1,e2,e3,e4,e5,e6,zdocker" {
		t.Fatalf("pages gave %s", got)
	}
	list := func(q string) string {
		rec := h.do("GET", "/entrypoints?"+q, "", "")
		wantStatus(t, rec, http.StatusOK)
		var l entrypointList
		_ = json.Unmarshal(rec.Body.Bytes(), &l)
		var out []string
		for _, v := range l.Entrypoints {
			out = append(out, v.ID)
		}
		return strings.Join(out, ",")
	}
	if got := list("host=H1.example"); got != "e1,e3,e5" {
		t.Errorf("host filter: %s", got)
	}
	if got := list("source=docker"); got != "zdocker" {
		t.Errorf("source filter: %s", got)
	}
	for _, bad := range []string{"limit=0", "limit=x", "limit=10001", "hosts=a", "limit=1&limit=2"} {
		wantStatus(t, h.do("GET", "/entrypoints?"+bad, "", ""), http.StatusBadRequest)
	}
}
