package headers

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// backend stands in for the exchange: it records the request's headers and
// answers with its own.
func backend(seen *http.Header) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*seen = r.Header.Clone()
		w.Header().Set("Server", "backend")
		w.Header().Set("X-Frame-Options", "SAMEORIGIN")
		w.Header().Set("X-Keep", "1")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok"))
	})
}

func TestHeaders(t *testing.T) {
	p := New(&config.Headers{
		Request:            map[string]string{"X-Script-Name": "app", "Cookie": ""},
		Response:           map[string]string{"Server": "", "Cache-Control": "no-store"},
		RequestAdd:         map[string]string{"X-Tag": "levee", "X-Script-Name": "extra"},
		ResponseAdd:        map[string]string{"X-Keep": "2"},
		FrameDeny:          true,
		ContentTypeNosniff: true,
		ReferrerPolicy:     "no-referrer",
		PermissionsPolicy:  "camera=()",
	})
	req := httptest.NewRequest(http.MethodGet, "http://a.com/", nil)
	req.Header.Set("Cookie", "secret=1")
	req.Header.Set("X-Script-Name", "client")
	req.Header.Set("X-Tag", "client")
	rec := httptest.NewRecorder()
	var seen http.Header
	p.Serve(rec, req, backend(&seen))

	if !slices.Equal(seen["X-Script-Name"], []string{"app", "extra"}) || seen.Get("Cookie") != "" ||
		!slices.Equal(seen["X-Tag"], []string{"client", "levee"}) {
		t.Errorf("request headers %v", seen)
	}
	want := map[string]string{
		"Server": "", "Cache-Control": "no-store", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "no-referrer", "Permissions-Policy": "camera=()",
	}
	if !slices.Equal(rec.Header()["X-Keep"], []string{"1", "2"}) {
		t.Errorf("added response header %q", rec.Header()["X-Keep"])
	}
	for k, v := range want {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("response %s = %q, want %q", k, got, v)
		}
	}
	if _, ok := rec.Header()["Server"]; ok {
		t.Error("Server not removed")
	}
	if rec.Body.String() != "ok" {
		t.Errorf("body %q", rec.Body)
	}
}

// A response written without WriteHeader gets the headers too, and so do
// Levee's own answers (the exchange's 502 and 503).
func TestHeadersImplicitWriteHeader(t *testing.T) {
	p := New(&config.Headers{FrameDeny: true})
	rec := httptest.NewRecorder()
	p.Serve(rec, httptest.NewRequest(http.MethodGet, "/", nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("x"))
	}))
	if rec.Header().Get("X-Frame-Options") != "DENY" {
		t.Fatalf("headers %v", rec.Header())
	}
}

func TestNewNothingToDo(t *testing.T) {
	if New(nil) != nil || New(&config.Headers{}) != nil {
		t.Fatal("a policy that changes nothing is not installed")
	}
}

// The wrapper keeps Flush and http.ResponseController working.
func TestHeadersFlushAndUnwrap(t *testing.T) {
	p := New(&config.Headers{Response: map[string]string{"X-A": "1"}})
	rec := httptest.NewRecorder()
	p.Serve(rec, httptest.NewRequest(http.MethodGet, "/", nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("flush: %v", err)
		}
	}))
	if !rec.Flushed || rec.Header().Get("X-A") != "1" {
		t.Fatalf("flushed %v headers %v", rec.Flushed, rec.Header())
	}
}

func BenchmarkHeaders(b *testing.B) {
	p := New(&config.Headers{Request: map[string]string{"X-A": "1"}, Response: map[string]string{"Server": ""}, FrameDeny: true})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	w := &nopWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(w, req, next)
	}
}

type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *nopWriter) WriteHeader(int)             {}
