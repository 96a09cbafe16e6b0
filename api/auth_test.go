package api

import (
	"net/http"
	"strings"
	"testing"
)

func TestAuthMatrix(t *testing.T) {
	type call struct{ method, path, ct, body string }
	read := call{"GET", "/entrypoints", "", ""}
	write := call{"POST", "/entrypoints", "application/json", seedPayload}
	health := call{"GET", "/health", "", ""}
	unknown := call{"GET", "/nope", "", ""}
	cases := []struct {
		name   string
		header string // Authorization
		c      call
		status int
	}{
		{"none reads", "", read, 401},
		{"none writes", "", write, 401},
		{"none health", "", health, 200},
		{"none unknown path", "", unknown, 401},
		{"read reads", "Bearer rd", read, 200},
		{"read writes", "Bearer rd", write, 403},
		{"read health", "Bearer rd", health, 200},
		{"read unknown path", "Bearer rd", unknown, 404},
		{"admin reads", "Bearer adm", read, 200},
		{"admin writes", "Bearer adm", write, 201},
		{"admin lowercase scheme", "bearer adm", read, 200},
		{"wrong reads", "Bearer nope", read, 401},
		{"wrong writes", "Bearer nope", write, 401},
		{"wrong health", "Bearer nope", health, 200},
		{"prefix of admin", "Bearer ad", read, 401},
		{"admin plus suffix", "Bearer adm2", read, 401},
		{"basic scheme", "Basic adm", read, 401},
		{"empty bearer", "Bearer ", read, 401},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, withTokens("adm", "rd"))
			var hdr []string
			if c.header != "" {
				hdr = []string{"Authorization", c.header}
			}
			rec := h.do(c.c.method, c.c.path, c.c.ct, c.c.body, hdr...)
			wantStatus(t, rec, c.status)
			if c.status == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Error("401 without WWW-Authenticate: Bearer")
			}
		})
	}
}

func TestEveryGuardedRouteNeedsAToken(t *testing.T) {
	h := newHarness(t, withTokens("adm", "rd"))
	for _, rt := range h.srv.routes {
		path := strings.NewReplacer("{id}", "app", "{route}", "app").Replace(rt.path)
		rec := h.do(rt.method, path, "application/json", seedPayload)
		if rt.access == accessOpen {
			if rec.Code == 401 {
				t.Errorf("%s is open but answered 401", rt.pattern())
			}
			continue
		}
		if rec.Code != 401 {
			t.Errorf("%s without a token: %d, want 401", rt.pattern(), rec.Code)
		}
		if rt.access == accessWrite {
			if rec := h.do(rt.method, path, "application/json", seedPayload, "Authorization", "Bearer rd"); rec.Code != 403 {
				t.Errorf("%s with the read token: %d, want 403", rt.pattern(), rec.Code)
			}
		}
	}
}

func TestOpenWithoutTokensWarnsOnce(t *testing.T) {
	h := newHarness(t)
	wantStatus(t, h.post(seedPayload), http.StatusCreated)
	wantStatus(t, h.do("GET", "/entrypoints", "", ""), http.StatusOK)
	if n := strings.Count(h.logs.String(), "without authentication"); n != 1 {
		t.Errorf("open-API warning logged %d times, want once: %s", n, h.logs)
	}
	if !strings.Contains(h.logs.String(), `"who":"open@`) {
		t.Errorf("open writes not logged as open@addr: %s", h.logs)
	}
	h2 := newHarness(t, withTokens("adm", ""))
	if strings.Contains(h2.logs.String(), "without authentication") {
		t.Error("warned although a token is set")
	}
}

func TestReadTokenOnlyKeepsWritesClosed(t *testing.T) {
	// With only a read token, nothing can write: an empty admin token must
	// never match.
	h := newHarness(t, withTokens("", "rd"))
	wantStatus(t, h.do("GET", "/entrypoints", "", "", "Authorization", "Bearer rd"), 200)
	wantStatus(t, h.do("POST", "/entrypoints", "application/json", seedPayload, "Authorization", "Bearer rd"), 403)
	wantStatus(t, h.do("POST", "/entrypoints", "application/json", seedPayload), 401)
}

func TestCheckListen(t *testing.T) {
	cases := []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:3035", "", true},
		{"127.1.2.3:3035", "", true},
		{"[::1]:3035", "", true},
		{"localhost:3035", "", true},
		{"0.0.0.0:3035", "", false},
		{":3035", "", false},
		{"[::]:3035", "", false},
		{"10.0.0.5:3035", "", false},
		{"api.example.com:3035", "", false},
		{"0.0.0.0:3035", "secret", true},
		{":3035", "secret", true},
		{"no-port", "", false},
	}
	for _, c := range cases {
		err := CheckListen(c.addr, c.token)
		if (err == nil) != c.ok {
			t.Errorf("CheckListen(%q, %q) = %v, want ok=%v", c.addr, c.token, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), c.addr) {
			t.Errorf("error %q does not name the address", err)
		}
	}
	if err := CheckListen("0.0.0.0:3035", ""); !strings.Contains(err.Error(), "--api-token") {
		t.Errorf("error %q does not say how to fix it", err)
	}
}
