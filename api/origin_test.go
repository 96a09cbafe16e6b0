package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router/status"
)

func TestHostPolicy(t *testing.T) {
	cases := []struct {
		listen  string
		extra   []string
		allowed []string
		refused []string
	}{
		{listen: "127.0.0.1:3035", extra: []string{"levee.internal", "ops.example:443", " "},
			allowed: []string{"127.0.0.1:3035", "127.0.0.1", "127.8.9.1:3035", "localhost:3035", "LOCALHOST.:3035", "app.localhost",
				"[::1]:3035", "[::ffff:127.0.0.1]:3035", "levee.internal:9999", "Levee.Internal.", "ops.example"},
			refused: []string{"evil.example:3035", "evil.example", "10.0.0.5:3035", "", "127.0.0.1.evil.example", "localhost.evil.example",
				"levee.internal.evil.example", "[::]:3035"}},
		{listen: ":3035", allowed: []string{"10.0.0.5:3035", "[2001:db8::1]:3035", "localhost"}, refused: []string{"evil.example:3035"}},
		{listen: "0.0.0.0:3035", allowed: []string{"192.168.1.10:3035"}, refused: []string{"rebind.evil.example:3035"}},
		{listen: "[::]:3035", allowed: []string{"10.0.0.5"}, refused: []string{"evil.example"}},
		{listen: "10.0.0.5:3035", allowed: []string{"10.0.0.5:3035", "127.0.0.1:3035"}, refused: []string{"10.0.0.6:3035", "evil.example"}},
		{listen: "levee.lan:3035", allowed: []string{"levee.lan:3035"}, refused: []string{"evil.example", "10.0.0.5"}},
		{listen: "", allowed: []string{"127.0.0.1:1", "localhost"}, refused: []string{"example.com"}},
	}
	for _, c := range cases {
		p, err := newHostPolicy(c.listen, c.extra)
		if err != nil {
			t.Fatalf("%q %q: %v", c.listen, c.extra, err)
		}
		for _, h := range c.allowed {
			if !p.allows(h) {
				t.Errorf("listen %q, hosts %q: Host %q refused", c.listen, c.extra, h)
			}
		}
		for _, h := range c.refused {
			if p.allows(h) {
				t.Errorf("listen %q, hosts %q: Host %q allowed", c.listen, c.extra, h)
			}
		}
	}
	for _, bad := range []string{"http://levee.lan", "levee.lan/api", "a b"} {
		if _, err := newHostPolicy("127.0.0.1:3035", []string{bad}); err == nil {
			t.Errorf("API host %q accepted", bad)
		}
	}
}

// A name that an attacker's DNS points at 127.0.0.1 reaches nothing: not
// the hashes in GET /entrypoints, not a write, not the dashboard.
func TestRebindingHostRefused(t *testing.T) {
	h := newHarnessAt(t, t.TempDir()+"/state.json", func(o *Options) {
		o.ListenAddr = "127.0.0.1:3035"
		o.Dashboard = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("dashboard")) })
	})
	send := func(method, target, host, ct, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Host = host
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		rec := httptest.NewRecorder()
		h.srv.ServeHTTP(rec, req)
		return rec
	}
	wantStatus(t, send("POST", "/entrypoints", "127.0.0.1:3035", "application/json", seedPayload), http.StatusCreated)
	for _, c := range []struct{ method, target, ct, body string }{
		{"GET", "/entrypoints", "", ""},
		{"GET", "/entrypoints/app", "", ""},
		{"GET", "/dashboard/", "", ""},
		{"GET", "/health", "", ""},
		{"DELETE", "/entrypoints/app", "", ""},
		{"POST", "/entrypoints", "application/json", strings.Replace(seedPayload, `"app"`, `"evil"`, 1)},
	} {
		rec := send(c.method, c.target, "rebind.evil.example:3035", c.ct, c.body)
		wantStatus(t, rec, http.StatusMisdirectedRequest)
		if strings.Contains(rec.Body.String(), "10.0.0.5") || strings.Contains(rec.Body.String(), "dashboard") {
			t.Errorf("%s %s: the refusal leaks: %s", c.method, c.target, rec.Body)
		}
	}
	if n := len(h.store.List()); n != 1 {
		t.Errorf("%d entrypoints stored, want the one created from loopback", n)
	}
	for _, host := range []string{"localhost:3035", "127.0.0.1:3035", "[::1]:3035"} {
		wantStatus(t, send("GET", "/entrypoints/app", host, "", ""), http.StatusOK)
	}
}

// A page on another origin cannot make the API change anything: not by a
// form POST, not by a fetch without a body; and a body that is not JSON or
// YAML is refused even without Origin (an old browser's form).
func TestCrossSiteWritesRefused(t *testing.T) {
	for _, tokens := range []bool{false, true} {
		var opts []harnessOption
		auth := []string{}
		if tokens {
			opts = append(opts, withTokens("adm", "rd"))
			auth = []string{"Authorization", "Bearer adm"}
		}
		h := newHarness(t, opts...)
		h.router.breakers["app"] = &status.BreakerStatus{Route: "app", Name: "app", State: "closed"}
		refused := []struct {
			name, ct, body string
			hdr            []string
			status         int
		}{
			{"form from another origin", "application/x-www-form-urlencoded", "a=1", []string{"Origin", "http://evil.example"}, 403},
			{"fetch from another site", "", "", []string{"Sec-Fetch-Site", "cross-site"}, 403},
			{"fetch from another port of localhost", "", "", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://localhost:8080"}, 403},
			{"sandboxed page", "", "", []string{"Origin", "null"}, 403},
			{"form without Origin", "application/x-www-form-urlencoded", "a=1", nil, 415},
			{"empty form without Origin", "application/x-www-form-urlencoded", "", nil, 415},
			{"text/plain form", "text/plain", "{}", nil, 415},
			{"multipart form", "multipart/form-data; boundary=x", "--x--", nil, 415},
			{"body without Content-Type", "", "{}", nil, 415},
		}
		for _, c := range refused {
			wantStatus(t, h.do("POST", "/breakers/app/open", c.ct, c.body, append(c.hdr, auth...)...), c.status)
			if st, _ := h.router.Breaker("app"); st.State != "closed" {
				t.Fatalf("tokens %v, %s: the breaker was opened", tokens, c.name)
			}
		}
		wantStatus(t, h.do("POST", "/entrypoints", "application/json", seedPayload, append([]string{"Origin", "http://evil.example"}, auth...)...), 403)
		wantStatus(t, h.do("DELETE", "/entrypoints/app", "", "", append([]string{"Sec-Fetch-Site", "cross-site"}, auth...)...), 403)
		if n := len(h.store.List()); n != 0 {
			t.Fatalf("tokens %v: a cross-origin POST stored %d entrypoints", tokens, n)
		}

		// Same-origin pages (the dashboard) and clients that are not
		// browsers (curl, the CLI) still write.
		for _, hdr := range [][]string{nil, {"Sec-Fetch-Site", "same-origin"}, {"Origin", "http://example.com"}, {"Sec-Fetch-Site", "none"}} {
			wantStatus(t, h.do("POST", "/breakers/app/reset", "", "", append(hdr, auth...)...), 200)
		}
		wantStatus(t, h.do("POST", "/breakers/app/open", "application/json", "", auth...), 200)
		wantStatus(t, h.do("POST", "/entrypoints", "application/json; charset=utf-8", seedPayload, append([]string{"Origin", "http://example.com"}, auth...)...), 201)
		wantStatus(t, h.do("GET", "/entrypoints/app", "", "", append([]string{"Sec-Fetch-Site", "cross-site"}, auth...)...), 200)
	}
}
