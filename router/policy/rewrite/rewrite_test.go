package rewrite

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

func TestRewrite(t *testing.T) {
	cases := []struct {
		name       string
		tr         config.Transform
		target     string
		wantStatus int
		wantPath   string // escaped, as forwarded
		wantQuery  string
		wantOrig   string // X-Replaced-Path
	}{
		{"replacePath", config.Transform{ReplacePath: "/index.html"}, "/anything?x=1", 200, "/index.html", "x=1", "/anything"},
		{"regex", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/api/v1/(.*)", Replacement: "/v2/$1"}},
			"/api/v1/users/7?x=1", 200, "/v2/users/7", "x=1", "/api/v1/users/7"},
		{"regex keeps an encoded character", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/api/(.*)", Replacement: "/$1"}},
			"/api/a%20b", 200, "/a%20b", "", "/api/a%20b"},
		{"regex strips a prefix", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/api(/.*)", Replacement: "$1"}},
			"/api/x", 200, "/x", "", "/api/x"},
		{"no match: untouched", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/api/(.*)", Replacement: "/$1"}},
			"/other", 200, "/other", "", ""},
		{"a dot segment made by the replacement is refused", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/(.*)/x$", Replacement: "/$1/../x"}},
			"/a/x", 400, "", "", ""},
		{"a relative result is refused", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/(.*)", Replacement: "$1"}},
			"/a", 400, "", "", ""},
		{"a run of slashes made by the replacement is refused (nginx would read another path)", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/pub/(.*)", Replacement: "/$1//x"}},
			"/pub/a", 400, "", "", ""},
		{"a ; parameter made by the replacement is refused (a Servlet would read another path)", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/pub/(.*)", Replacement: "/admin;$1"}},
			"/pub/a", 400, "", "", ""},
		{"an encoded slash made by the replacement is refused", config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/(.*)", Replacement: "/a%2F$1"}},
			"/b", 400, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := New(c.tr)
			req := httptest.NewRequest("GET", "http://a.com"+c.target, nil)
			origURL := req.URL.String()
			rec := httptest.NewRecorder()
			var seen *http.Request
			p.Serve(rec, req, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = r }))
			if rec.Code != c.wantStatus {
				t.Fatalf("status %d", rec.Code)
			}
			if req.URL.String() != origURL {
				t.Errorf("the client's request was changed: %s", req.URL)
			}
			if c.wantStatus != 200 {
				if rec.Header().Get("X-Levee-Diagnostic") != "bad-path" {
					t.Errorf("diagnostic %q", rec.Header().Get("X-Levee-Diagnostic"))
				}
				if seen != nil {
					t.Fatal("a refused rewrite reached the backend")
				}
				return
			}
			if seen.URL.EscapedPath() != c.wantPath || seen.URL.RawQuery != c.wantQuery || seen.Header.Get("X-Replaced-Path") != c.wantOrig {
				t.Fatalf("forwarded %s ? %s, X-Replaced-Path %q", seen.URL.EscapedPath(), seen.URL.RawQuery, seen.Header.Get("X-Replaced-Path"))
			}
		})
	}
	if New(config.Transform{}) != nil || New(config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "("}}) != nil {
		t.Fatal("no rewrite, or a bad regex, installs nothing")
	}
}

func BenchmarkRewriteRegex(b *testing.B) {
	p := New(config.Transform{ReplacePathRegex: &config.ReplacePathRegex{Regex: "^/api/v1/(.*)", Replacement: "/v2/$1"}})
	req := httptest.NewRequest("GET", "http://a.com/api/v1/users/7", nil)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(nil, req, next)
	}
}
