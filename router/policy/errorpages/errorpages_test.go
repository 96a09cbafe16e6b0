package errorpages

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// server is a client writer that also serves named routes, as the
// proxy's does.
type server struct {
	*httptest.ResponseRecorder
	page  http.HandlerFunc
	asked []string
	codes []int // every head written
}

func (s *server) WriteHeader(code int) {
	s.codes = append(s.codes, code)
	s.ResponseRecorder.WriteHeader(code)
}

func (s *server) ServeRoute(into http.ResponseWriter, r *http.Request, route string) bool {
	s.asked = append(s.asked, route+" "+r.Method+" "+r.URL.Path)
	s.page(into, r)
	return true
}

func compile(t *testing.T, status string) *Policy {
	t.Helper()
	p, err := New(&config.ErrorPages{Status: status, Route: "pages", Query: "/e/{status}", Timeout: time.Second}, "", nil)
	if p == nil || err != nil {
		t.Fatal("not compiled")
	}
	return p
}

// An informational head passes through at once and the final head is
// still judged; a flush of a held answer sends nothing.
func TestInformationalPassesFinalIsReplaced(t *testing.T) {
	s := &server{ResponseRecorder: httptest.NewRecorder(), page: func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "page")
	}}
	var flushedEarly bool
	compile(t, "503").Serve(s, httptest.NewRequest(http.MethodGet, "/x", nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "secret")
		w.(http.Flusher).Flush()
		flushedEarly = s.Flushed
	}))
	if flushedEarly {
		t.Fatal("a held answer was flushed")
	}
	if !slices.Equal(s.codes, []int{103, 503}) || s.Body.String() != "page" || len(s.asked) != 1 || s.asked[0] != "pages GET /e/503" {
		t.Fatalf("got heads %v %q asked %v", s.codes, s.Body.String(), s.asked)
	}
}

// A page that is not a 2xx is not sent: the original answer is, as it was.
func TestNon2xxPageFallsBack(t *testing.T) {
	s := &server{ResponseRecorder: httptest.NewRecorder(), page: func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, "no page")
	}}
	compile(t, "5xx").Serve(s, httptest.NewRequest(http.MethodGet, "/x", nil), http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Original", "1")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "original")
	}))
	if s.Code != 502 || s.Body.String() != "original" || s.Header().Get("X-Original") != "1" {
		t.Fatalf("got %d %q %v", s.Code, s.Body.String(), s.Header())
	}
}

// The validator's refusals compile to no policy.
func TestNewRefusesInvalidConfig(t *testing.T) {
	for _, c := range []*config.ErrorPages{
		nil,
		{Status: "5xx", Query: "/x"},
		{Status: "200", Route: "p", Query: "/x"},
		{Status: "5xx", Route: "p", Query: "x"},
		{Status: "5xx", Route: "p", File: "/etc/hostname", Query: "/x"},
	} {
		if p, err := New(c, "/etc", nil); p != nil || err != nil {
			t.Errorf("New(%+v) compiled: %v", c, err)
		}
	}
}
