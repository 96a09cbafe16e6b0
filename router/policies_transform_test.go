package router

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/compress"
)

func names(ps []policy.Policy) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name())
	}
	return out
}

// decodeTransform decodes labels as the Docker provider would.
func decodeTransform(t *testing.T, labels map[string]string) config.Entrypoint {
	t.Helper()
	labels["host"] = "a.com"
	cfg, _ := config.DecodeLabels(labels, diagnostics.Source{Provider: "docker"}, func(f string) string { return "levee.http.app." + f })
	return cfg.Entrypoint
}

func TestTransformPolicies(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"none", map[string]string{}, nil},
		{"every one", map[string]string{
			"compress": "true", "replacePath": "/x", "headers.frameDeny": "true", "cors.allowOrigins": "*",
			"redirectRegex.regex": "^http://old/(.*)", "redirectRegex.replacement": "https://new/$1", "redirectScheme.scheme": "https",
			"sticky.cookie": "true",
		}, []string{"redirect-scheme", "redirect-regex", "cors", "headers", "rewrite", "compress"}},
		{"bad values install nothing", map[string]string{
			"redirectRegex.regex": "(", "redirectRegex.replacement": "x", "replacePathRegex.regex": "^(", "replacePathRegex.replacement": "/",
			"headers.customRequestHeaders.Host": "x", "cors.allowOrigins": "a.com",
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ep := decodeTransform(t, c.labels)
			ps := transformPolicies(&ep, policy.Env{}, compress.NewEncoders(compress.DefaultBudget))
			if got := names(ps); !slices.Equal(got, c.want) {
				t.Fatalf("policies %v, want %v", got, c.want)
			}
			if !slices.IsSortedFunc(ps, func(a, b policy.Policy) int { return int(a.Stage() - b.Stage()) }) {
				t.Fatal("not in stage order")
			}
		})
	}
}

// The policies run as the chain will run them (in Stage order, each
// wrapping the next) around a backend: a redirect answers before anything
// else, the rewrite and headers change what the backend sees, and the
// response comes back compressed with the headers set.
func TestTransformPoliciesChained(t *testing.T) {
	ep := decodeTransform(t, map[string]string{
		"compress.minResponseBodyBytes": "0", "replacePathRegex.regex": "^/api/(.*)", "replacePathRegex.replacement": "/$1",
		"headers.customRequestHeaders.X-From": "levee", "headers.customResponseHeaders.Server": "", "headers.contentTypeNosniff": "true",
		"redirectRegex.regex": "^http://a\\.com/old$", "redirectRegex.replacement": "http://a.com/new",
	})
	ps := transformPolicies(&ep, policy.Env{}, compress.NewEncoders(compress.DefaultBudget))
	var seen *http.Request
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		w.Header().Set("Server", "backend")
		_, _ = w.Write([]byte("hello hello hello hello"))
	})
	for i := len(ps) - 1; i >= 0; i-- {
		p, next := ps[i], h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.Serve(w, r, next) })
	}

	req := httptest.NewRequest("GET", "http://a.com/api/users", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if seen == nil || seen.URL.Path != "/users" || seen.Header.Get("X-From") != "levee" {
		t.Fatalf("backend saw %+v", seen)
	}
	if rec.Header().Get("Content-Encoding") != "gzip" || rec.Header().Get("Server") != "" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("response headers %v", rec.Header())
	}

	seen = nil
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://a.com/old", nil))
	if seen != nil || rec.Code != http.StatusFound || rec.Header().Get("Location") != "http://a.com/new" {
		t.Fatalf("redirect: %d %v (backend reached: %v)", rec.Code, rec.Header(), seen != nil)
	}
}

// redirectScheme believes X-Forwarded-Proto only from a trusted proxy
// (levee serve --trusted-proxies): behind a TLS-terminating balancer it
// does not redirect https requests in a loop, and a client elsewhere
// cannot talk its way out of the redirect.
func TestRedirectSchemeTrustsForwardedProtoOnlyFromTrustedProxies(t *testing.T) {
	ep := decodeTransform(t, map[string]string{"redirectScheme.scheme": "https"})
	env := policy.Env{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	ps := transformPolicies(&ep, env, compress.NewEncoders(compress.DefaultBudget))
	if len(ps) != 1 {
		t.Fatalf("policies = %v, want the redirectScheme alone", names(ps))
	}
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, tt := range []struct {
		peer string
		want int
	}{
		{"10.1.2.3:5000", http.StatusNoContent},          // trusted proxy says https: passed on
		{"192.0.2.7:5000", http.StatusFound},             // anyone else's claim is not believed
		{"[::ffff:10.9.9.9]:5000", http.StatusNoContent}, // IPv4-mapped form of a trusted peer
	} {
		req := httptest.NewRequest("GET", "http://a.com/x", nil)
		req.RemoteAddr = tt.peer
		req.Header.Set("X-Forwarded-Proto", "https")
		rec := httptest.NewRecorder()
		ps[0].Serve(rec, req, backend)
		if rec.Code != tt.want {
			t.Errorf("peer %s with X-Forwarded-Proto https: %d, want %d", tt.peer, rec.Code, tt.want)
		}
	}
}
