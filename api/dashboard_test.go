package api

import (
	"net/http"
	"testing"
	"testing/fstest"
)

const (
	adminToken = "i17-admin-token-0123456789"
	readToken  = "i17-read-token-0123456789"
)

// The dashboard's files are served without a token (a browser's
// navigation cannot carry one) while every API route around them still
// needs it; /dashboard redirects to /dashboard/; without Options.Dashboard
// the path is an unknown one (a token, then 404).
func TestDashboardMount(t *testing.T) {
	files := http.FileServerFS(fstest.MapFS{"index.html": {Data: []byte("<!doctype html>")}})
	h := newHarness(t, withTokens(adminToken, readToken), func(o *Options) {
		o.Dashboard = http.StripPrefix("/dashboard", files)
	})
	rec := h.do("GET", "/dashboard/", "", "")
	wantStatus(t, rec, http.StatusOK)
	if got := rec.Body.String(); got != "<!doctype html>" {
		t.Errorf("GET /dashboard/ = %q", got)
	}
	rec = h.do("GET", "/dashboard", "", "")
	wantStatus(t, rec, http.StatusMovedPermanently)
	if loc := rec.Header().Get("Location"); loc != "/dashboard/" {
		t.Errorf("Location %q, want /dashboard/", loc)
	}
	wantStatus(t, h.do("POST", "/dashboard/", "", ""), http.StatusUnauthorized)
	wantStatus(t, h.do("GET", "/session", "", ""), http.StatusUnauthorized)

	plain := newHarness(t, withTokens(adminToken, readToken))
	wantStatus(t, plain.do("GET", "/dashboard/", "", ""), http.StatusUnauthorized)
	wantStatus(t, plain.do("GET", "/dashboard/", "", "", "Authorization", "Bearer "+readToken), http.StatusNotFound)
}

// GET /session names the token's role, so the dashboard offers actions
// only to those who may take them.
func TestSessionRole(t *testing.T) {
	h := newHarness(t, withTokens(adminToken, readToken))
	for _, c := range []struct{ token, want string }{
		{adminToken, `{"role":"admin","can_write":true}`},
		{readToken, `{"role":"read","can_write":false}`},
	} {
		rec := h.do("GET", "/session", "", "", "Authorization", "Bearer "+c.token)
		wantStatus(t, rec, http.StatusOK)
		if got := rec.Body.String(); got != c.want+"\n" {
			t.Errorf("session = %s, want %s", got, c.want)
		}
	}
	open := newHarness(t)
	rec := open.do("GET", "/session", "", "")
	wantStatus(t, rec, http.StatusOK)
	if got := rec.Body.String(); got != `{"role":"open","can_write":true}`+"\n" {
		t.Errorf("open session = %s", got)
	}
}

// GET /diagnostics/catalogue is the whole catalogue, what `levee explain`
// prints, for the dashboard's explanations.
func TestCatalogue(t *testing.T) {
	h := newHarness(t)
	rec := h.do("GET", "/diagnostics/catalogue", "", "")
	wantStatus(t, rec, http.StatusOK)
	m := decodeBody(t, rec)
	codes, _ := m["codes"].([]any)
	found := false
	for _, c := range codes {
		e := c.(map[string]any)
		if e["code"] == "W024" && e["title"] != "" && e["effect"] != "" && e["fix"] != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("W024 with title, effect and fix not in %d codes", len(codes))
	}
}
