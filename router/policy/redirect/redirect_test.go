package redirect

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

type outcome struct {
	reached  bool
	status   int
	location string
}

func run(t *testing.T, p interface {
	Serve(http.ResponseWriter, *http.Request, http.Handler)
}, req *http.Request) outcome {
	t.Helper()
	var o outcome
	rec := httptest.NewRecorder()
	p.Serve(rec, req, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.reached = true
		w.WriteHeader(http.StatusOK)
	}))
	o.status, o.location = rec.Code, rec.Header().Get("Location")
	return o
}

func TestRedirectScheme(t *testing.T) {
	trustAll := func(*http.Request) bool { return true }
	cases := []struct {
		name   string
		cfg    config.RedirectScheme
		method string
		target string
		tls    bool
		xfp    string
		trust  func(*http.Request) bool
		want   outcome
	}{
		{"http to https", config.RedirectScheme{Scheme: "https"}, "GET", "http://a.com/x?y=1", false, "", nil,
			outcome{status: 302, location: "https://a.com/x?y=1"}},
		{"permanent", config.RedirectScheme{Scheme: "https", Permanent: true}, "GET", "http://a.com/", false, "", nil,
			outcome{status: 301, location: "https://a.com/"}},
		{"POST keeps its method", config.RedirectScheme{Scheme: "https"}, "POST", "http://a.com/", false, "", nil,
			outcome{status: 307, location: "https://a.com/"}},
		{"POST permanent", config.RedirectScheme{Scheme: "https", Permanent: true}, "POST", "http://a.com/", false, "", nil,
			outcome{status: 308, location: "https://a.com/"}},
		{"port replaced", config.RedirectScheme{Scheme: "https", Port: 8443}, "GET", "http://a.com:8080/p", false, "", nil,
			outcome{status: 302, location: "https://a.com:8443/p"}},
		{"default port left out", config.RedirectScheme{Scheme: "https", Port: 443}, "GET", "http://a.com:8080/p", false, "", nil,
			outcome{status: 302, location: "https://a.com/p"}},
		{"IPv6 host", config.RedirectScheme{Scheme: "https"}, "GET", "http://[::1]:80/", false, "", nil,
			outcome{status: 302, location: "https://[::1]/"}},
		{"already https", config.RedirectScheme{Scheme: "https"}, "GET", "https://a.com/", true, "", nil,
			outcome{reached: true, status: 200}},
		{"a client's X-Forwarded-Proto is not believed", config.RedirectScheme{Scheme: "https"}, "GET", "http://a.com/", false, "https", nil,
			outcome{status: 302, location: "https://a.com/"}},
		{"a trusted proxy's X-Forwarded-Proto is", config.RedirectScheme{Scheme: "https"}, "GET", "http://a.com/", false, "https", trustAll,
			outcome{reached: true, status: 200}},
		{"to http", config.RedirectScheme{Scheme: "http"}, "GET", "https://a.com/", true, "", nil,
			outcome{status: 302, location: "http://a.com/"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewScheme(&c.cfg)
			p.TrustForwarded = c.trust
			req := httptest.NewRequest(c.method, c.target, nil)
			if !c.tls {
				req.TLS = nil
			} else {
				req.TLS = &tls.ConnectionState{}
			}
			if c.xfp != "" {
				req.Header.Set("X-Forwarded-Proto", c.xfp)
			}
			if got := run(t, p, req); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestRedirectRegex(t *testing.T) {
	cases := []struct {
		name   string
		cfg    config.RedirectRegex
		target string
		want   outcome
	}{
		{"match", config.RedirectRegex{Regex: `^http://www\.a\.com/(.*)`, Replacement: "https://a.com/${1}"}, "http://www.a.com/x?q=1",
			outcome{status: 302, location: "https://a.com/x?q=1"}},
		{"permanent", config.RedirectRegex{Regex: `^http://old/(.*)`, Replacement: "https://new/$1", Permanent: true}, "http://old/p",
			outcome{status: 301, location: "https://new/p"}},
		{"no match", config.RedirectRegex{Regex: `^http://old/`, Replacement: "https://new/"}, "http://other/p",
			outcome{reached: true, status: 200}},
		{"same URL: no loop", config.RedirectRegex{Regex: `^(.*)$`, Replacement: "$1"}, "http://a.com/p",
			outcome{reached: true, status: 200}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewRegex(&c.cfg)
			if got := run(t, p, httptest.NewRequest("GET", c.target, nil)); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
	if NewRegex(&config.RedirectRegex{Regex: "(", Replacement: "x"}) != nil || NewRegex(nil) != nil || NewScheme(nil) != nil {
		t.Fatal("a bad or absent redirect is not installed")
	}
}

// A group captured from the path never chooses the host a redirect sends
// the client to: a target whose scheme and host are neither written by
// the replacement nor the request's own host is refused (400 bad-path),
// in every spelling a browser reads as another site.
func TestRedirectRegexNeverLeavesTheSiteForAPath(t *testing.T) {
	refused := outcome{status: http.StatusBadRequest}
	cases := []struct {
		name, regex, replacement, target string
		want                             outcome
	}{
		{"scheme-relative", `^https?://[^/]+/legacy/(.*)`, "/${1}", "http://h.test/legacy//evil.example/x", refused},
		{"group is the whole target", `^https?://[^/]+/legacy(.*)`, "${1}", "http://h.test/legacy//evil.example/x", refused},
		{"tab inside", `^https?://[^/]+/legacy(.*)`, "${1}", "http://h.test/legacy/%09/evil.example/x", outcome{status: 302, location: "/%09/evil.example/x"}},
		{"absolute in a group", `^https?://[^/]+/go/(.*)`, "$1", "http://h.test/go/https://evil.example/", refused},
		{"special scheme without slashes", `^https?://[^/]+/go/(.*)`, "$1", "http://h.test/go/https:evil.example", refused},
		{"javascript", `^https?://[^/]+/go/(.*)`, "$1", "http://h.test/go/javascript:alert(1)", refused},
		{"host suffix after the written host", `^https?://[^/]+/go(.*)`, "https://a.example${1}", "http://h.test/go.evil.example/x", refused},
		{"userinfo after the written host", `^https?://[^/]+/go(.*)`, "https://a.example${1}", "http://h.test/go@evil.example/x", refused},
		{"written host, path from the group", `^https?://[^/]+/go/(.*)`, "https://a.example/${1}", "http://h.test/go//evil.example/x",
			outcome{status: 302, location: "https://a.example//evil.example/x"}},
		{"written host, group starts the path", `^https?://[^/]+/go(.*)`, "https://a.example${1}", "http://h.test/go/x",
			outcome{status: 302, location: "https://a.example/x"}},
		{"to https on the request's own host", `^http://(.*)`, "https://${1}", "http://h.test/x?q=1",
			outcome{status: 302, location: "https://h.test/x?q=1"}},
		{"relative path", `^https?://[^/]+/old/(.*)`, "/new/${1}", "http://h.test/old//x", outcome{status: 302, location: "/new//x"}},
		{"literal dollar", `^https?://[^/]+/old/(.*)`, "https://a.example/$$/${1}", "http://h.test/old/x",
			outcome{status: 302, location: "https://a.example/$/x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewRegex(&config.RedirectRegex{Regex: c.regex, Replacement: c.replacement})
			rec := httptest.NewRecorder()
			reached := false
			p.Serve(rec, httptest.NewRequest("GET", c.target, nil), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
			got := outcome{reached: reached, status: rec.Code, location: rec.Header().Get("Location")}
			if got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if c.want == refused && rec.Header().Get("X-Levee-Diagnostic") != "bad-path" {
				t.Fatalf("refusal without X-Levee-Diagnostic: bad-path: %v", rec.Header())
			}
		})
	}
}

// offSite reads a target as a browser does: backslashes as slashes, tabs
// and newlines removed, leading spaces dropped.
func TestOffSiteReadsTargetsAsBrowsersDo(t *testing.T) {
	p := NewRegex(&config.RedirectRegex{Regex: `^(.*)$`, Replacement: "${1}"})
	for target, want := range map[string]bool{
		`/\evil.example/x`:      true,
		`\\evil.example`:        true,
		"/\t/evil.example":      true,
		" //evil.example":       true,
		"\x01//evil.example":    true,
		"HTTPS://evil.example":  true,
		"https:/\\evil.example": true,
		"//h.test/x":            false,
		"//H.TEST:8080/x":       false,
		"https://h.test.evil/x": true,
		"https://h.test@evil/x": true,
		"/x//evil.example":      false,
		"x:y/z":                 true,
		"./javascript:alert(1)": false,
		"?next=//evil.example":  false,
		"#//evil.example":       false,
		"mailto:a@evil.example": true,
	} {
		if got := p.offSite(target, "h.test:8080"); got != want {
			t.Errorf("offSite(%q) = %v, want %v", target, got, want)
		}
	}
}

func BenchmarkRedirectSchemePass(b *testing.B) {
	p := NewScheme(&config.RedirectScheme{Scheme: "http"})
	req := httptest.NewRequest("GET", "http://a.com/x", nil)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(nil, req, next)
	}
}

func BenchmarkRedirectRegexMiss(b *testing.B) {
	p := NewRegex(&config.RedirectRegex{Regex: `^http://old\.a\.com/(.*)`, Replacement: "https://a.com/$1"})
	req := httptest.NewRequest("GET", "http://a.com/some/path?q=1", nil)
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(nil, req, next)
	}
}
