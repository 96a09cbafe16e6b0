package cors

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

func echoBackend(reached *bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*reached = true
		// A backend that allows everyone: Levee's policy must win.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.WriteHeader(http.StatusOK)
	})
}

func TestCORS(t *testing.T) {
	cfg := &config.CORS{AllowOrigins: []string{"https://app.example.com"}, AllowMethods: []string{"GET", "PUT"},
		AllowHeaders: []string{"X-Token"}, ExposeHeaders: []string{"X-Request-Id"}, AllowCredentials: true, MaxAge: 10 * time.Minute}
	cases := []struct {
		name        string
		method      string
		hdr         map[string]string
		wantReached bool
		wantStatus  int
		want        map[string]string // "" = absent
	}{
		{"no origin: untouched but varies", "GET", nil, true, 200,
			map[string]string{"Access-Control-Allow-Origin": "", "Vary": "Origin"}},
		{"allowed origin", "GET", map[string]string{"Origin": "https://app.example.com"}, true, 200,
			map[string]string{"Access-Control-Allow-Origin": "https://app.example.com", "Access-Control-Allow-Credentials": "true",
				"Access-Control-Expose-Headers": "X-Request-Id", "Vary": "Origin"}},
		{"other origin: the backend's grant is removed", "GET", map[string]string{"Origin": "https://evil.example"}, true, 200,
			map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Credentials": ""}},
		{"preflight granted", "OPTIONS", map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "PUT",
			"Access-Control-Request-Headers": "x-token"}, false, 204,
			map[string]string{"Access-Control-Allow-Origin": "https://app.example.com", "Access-Control-Allow-Methods": "GET, PUT",
				"Access-Control-Allow-Headers": "x-token", "Access-Control-Max-Age": "600", "Access-Control-Allow-Credentials": "true"}},
		{"preflight with a header not allowed", "OPTIONS", map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "PUT",
			"Access-Control-Request-Headers": "x-other"}, false, 204,
			map[string]string{"Access-Control-Allow-Origin": "", "Access-Control-Allow-Methods": ""}},
		{"preflight with a method not allowed", "OPTIONS", map[string]string{"Origin": "https://app.example.com", "Access-Control-Request-Method": "DELETE"}, false, 204,
			map[string]string{"Access-Control-Allow-Origin": ""}},
		{"preflight from another origin", "OPTIONS", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"}, false, 204,
			map[string]string{"Access-Control-Allow-Origin": ""}},
		{"plain OPTIONS goes to the backend", "OPTIONS", map[string]string{"Origin": "https://app.example.com"}, true, 200,
			map[string]string{"Access-Control-Allow-Origin": "https://app.example.com"}},
	}
	p := New(cfg)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, "http://a.com/x", nil)
			for k, v := range c.hdr {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			reached := false
			p.Serve(rec, req, echoBackend(&reached))
			if reached != c.wantReached || rec.Code != c.wantStatus {
				t.Fatalf("reached %v status %d, want %v %d", reached, rec.Code, c.wantReached, c.wantStatus)
			}
			for k, v := range c.want {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// The wildcard without credentials answers "*" and needs no Vary.
func TestCORSWildcard(t *testing.T) {
	p := New(&config.CORS{AllowOrigins: []string{"*"}, AllowMethods: []string{"GET"}})
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Origin", "https://any.example")
	rec := httptest.NewRecorder()
	reached := false
	p.Serve(rec, req, echoBackend(&reached))
	if rec.Header().Get("Access-Control-Allow-Origin") != "*" || rec.Header().Get("Vary") != "" {
		t.Fatalf("headers %v", rec.Header())
	}
	if New(nil) != nil || New(&config.CORS{}) != nil {
		t.Fatal("CORS without origins is not installed")
	}
}

func BenchmarkCORS(b *testing.B) {
	p := New(&config.CORS{AllowOrigins: []string{"https://app.example.com"}, AllowMethods: []string{"GET"}})
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Origin", "https://app.example.com")
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) })
	b.ReportAllocs()
	for b.Loop() {
		w := &nopWriter{h: http.Header{}}
		p.Serve(w, req, next)
	}
}

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}
