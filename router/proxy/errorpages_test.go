package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// handlerBackend is a backend answering with h.
func handlerBackend(t *testing.T, h http.HandlerFunc) config.Backend {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: host, Port: p, Weight: config.DefaultWeight}
}

// appBackend answers /status/<code> with that code, a secret body and
// its own headers, and everything else 200.
func appBackend(t *testing.T) config.Backend {
	return handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/status/"))
		if err != nil {
			_, _ = io.WriteString(w, "ok")
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("X-App-Secret", "stack")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "SECRET stack trace "+strings.Repeat("x", 100))
	})
}

// pagesBackend serves /<code>.html and counts the requests, recording
// the last method and Host.
type pagesBackend struct {
	hits   atomic.Int64
	method atomic.Value
	host   atomic.Value
}

func newPages(t *testing.T) (*pagesBackend, config.Backend) {
	pb := &pagesBackend{}
	return pb, handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		pb.hits.Add(1)
		pb.method.Store(r.Method)
		pb.host.Store(r.Host)
		if !strings.HasSuffix(r.URL.Path, ".html") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("X-Pages-Internal", "1")
		_, _ = io.WriteString(w, "<h1>page "+strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), ".html")+"</h1>")
	})
}

func withErrors(e config.Entrypoint, status, route string) config.Entrypoint {
	e.Transform.Errors = &config.ErrorPages{Status: status, Route: route, Query: config.DefaultErrorQuery, Timeout: 2 * time.Second}
	return e
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A listed status gets the page with the original status and the
// headers that give the status meaning, never the original body or its
// other headers; an unlisted status passes as the backend sent it.
func TestErrorPagesReplaceListedStatuses(t *testing.T) {
	h := newHarness(t, Options{})
	pages, pb := newPages(t)
	h.set("docker", withErrors(ep("app", appBackend(t)), "404,500-599", "pages"), ep("pages", pb))

	for _, code := range []int{503, 500, 404} {
		resp := h.do(http.MethodGet, "app.test", "/status/"+strconv.Itoa(code), nil)
		body := readAll(t, resp)
		if resp.StatusCode != code || body != "<h1>page "+strconv.Itoa(code)+"</h1>" {
			t.Fatalf("%d: got %d %q", code, resp.StatusCode, body)
		}
		if resp.Header.Get("Content-Type") != "text/html" || resp.Header.Get("X-App-Secret") != "" || resp.Header.Get("X-Pages-Internal") != "" {
			t.Fatalf("%d: headers %v", code, resp.Header)
		}
		if resp.Header.Get("Retry-After") != "7" || resp.ContentLength != int64(len(body)) {
			t.Fatalf("%d: Retry-After %q, length %d", code, resp.Header.Get("Retry-After"), resp.ContentLength)
		}
	}
	if got := pages.host.Load(); got != "app.test" || pages.method.Load() != http.MethodGet {
		t.Fatalf("page asked with Host %v method %v", got, pages.method.Load())
	}
	before := pages.hits.Load()
	for _, path := range []string{"/status/403", "/"} {
		resp := h.do(http.MethodGet, "app.test", path, nil)
		body := readAll(t, resp)
		if path == "/" && (resp.StatusCode != 200 || body != "ok") {
			t.Fatalf("/: %d %q", resp.StatusCode, body)
		}
		if path != "/" && (resp.StatusCode != 403 || !strings.HasPrefix(body, "SECRET") || resp.Header.Get("X-App-Secret") != "stack") {
			t.Fatalf("unlisted 403: %d %q %v", resp.StatusCode, body, resp.Header)
		}
	}
	if pages.hits.Load() != before {
		t.Fatal("the pages route was asked for an unlisted status")
	}
}

// When the pages cannot be had (the route has no live backend, answers
// 404, or is not there at all) the client gets the original answer,
// body included.
func TestErrorPagesFallBackToTheOriginal(t *testing.T) {
	h := newHarness(t, Options{})
	_, pb := newPages(t)
	noPage := withErrors(ep("nopage", appBackend(t)), "5xx", "pages")
	noPage.Transform.Errors.Query = "/missing"
	h.set("docker",
		withErrors(ep("down", appBackend(t)), "5xx", "dead"), ep("dead", deadBackend(t)),
		noPage, ep("pages", pb),
		withErrors(ep("unknown", appBackend(t)), "5xx", "nosuchroute"),
	)
	for _, host := range []string{"down.test", "nopage.test", "unknown.test"} {
		resp := h.do(http.MethodGet, host, "/status/502", nil)
		body := readAll(t, resp)
		if resp.StatusCode != 502 || body != "SECRET stack trace "+strings.Repeat("x", 100) || resp.Header.Get("X-App-Secret") != "stack" {
			t.Fatalf("%s: got %d %q %v", host, resp.StatusCode, body, resp.Header)
		}
	}
}

// A HEAD gets the page's head (its length, no body) with the original
// status; the page is asked with GET.
func TestErrorPagesHead(t *testing.T) {
	h := newHarness(t, Options{})
	pages, pb := newPages(t)
	h.set("docker", withErrors(ep("app", appBackend(t)), "5xx", "pages"), ep("pages", pb))
	resp := h.do(http.MethodHead, "app.test", "/status/503", nil)
	body := readAll(t, resp)
	if resp.StatusCode != 503 || body != "" || resp.ContentLength != int64(len("<h1>page 503</h1>")) || resp.Header.Get("Content-Type") != "text/html" {
		t.Fatalf("HEAD: %d %q length %d %v", resp.StatusCode, body, resp.ContentLength, resp.Header)
	}
	if pages.method.Load() != http.MethodGet {
		t.Fatalf("page asked with %v", pages.method.Load())
	}
}

// Levee's own answers are replaced too: a route whose only backend is
// dead answers 502 from Levee, and the client gets the page.
func TestErrorPagesForLeveesOwnAnswers(t *testing.T) {
	h := newHarness(t, Options{})
	_, pb := newPages(t)
	h.set("docker", withErrors(ep("app", deadBackend(t)), "502-504", "pages"), ep("pages", pb))
	resp := h.do(http.MethodGet, "app.test", "/", nil)
	body := readAll(t, resp)
	if resp.StatusCode < 502 || resp.StatusCode > 504 || body != "<h1>page "+strconv.Itoa(resp.StatusCode)+"</h1>" || resp.Header.Get(HeaderDiagnostic) == "" {
		t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}
}

// A big original body is never sent when the page is, and a streamed
// unlisted answer is not held: its first bytes reach the client before
// the backend finished.
func TestErrorPagesDiscardBigBodiesAndStream(t *testing.T) {
	h := newHarness(t, Options{})
	_, pb := newPages(t)
	release := make(chan struct{})
	app := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big" {
			w.WriteHeader(500)
			for range 64 {
				_, _ = w.Write([]byte(strings.Repeat("S", 16<<10)))
			}
			return
		}
		_, _ = io.WriteString(w, "first,")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "second")
	})
	h.set("docker", withErrors(ep("app", app), "5xx", "pages"), ep("pages", pb))
	resp := h.do(http.MethodGet, "app.test", "/big", nil)
	if body := readAll(t, resp); resp.StatusCode != 500 || body != "<h1>page 500</h1>" {
		t.Fatalf("big: %d, %d bytes", resp.StatusCode, len(body))
	}
	resp = h.do(http.MethodGet, "app.test", "/stream", nil)
	defer resp.Body.Close()
	buf := make([]byte, len("first,"))
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first," {
		t.Fatalf("stream: %q %v", buf, err)
	}
	close(release)
	if rest, _ := io.ReadAll(resp.Body); string(rest) != "second" {
		t.Fatalf("stream rest %q", rest)
	}
}

// A listed answer whose backend breaks off its body still gets the
// whole page: the original's break never reaches the client.
func TestErrorPagesWholeAfterABrokenOriginal(t *testing.T) {
	h := newHarness(t, Options{})
	_, pb := newPages(t)
	app := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(500)
		_, _ = io.WriteString(w, "SECRET partial")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	h.set("docker", withErrors(ep("app", app), "5xx", "pages"), ep("pages", pb))
	resp := h.do(http.MethodGet, "app.test", "/", nil)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if resp.StatusCode != 500 || string(body) != "<h1>page 500</h1>" || err != nil {
		t.Fatalf("got %d %q %v", resp.StatusCode, body, err)
	}
}

// An open breaker's own 503 gets the page too, keeping its diagnostic
// and Retry-After; the refused request never reaches the backend.
func TestErrorPagesForAnOpenBreaker(t *testing.T) {
	h := newHarness(t, Options{})
	_, pb := newPages(t)
	var hits atomic.Int64
	app := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	})
	e := withBreaker(ep("app", app), breaker.Params{Threshold: 1, MinRequests: 1, ConsecutiveFailures: 1, Cooldown: time.Minute})
	h.set("docker", withErrors(e, "503", "pages"), ep("pages", pb))
	if code, _, _ := h.get("app.test", "/"); code != 500 {
		t.Fatalf("first: %d, want the backend's unlisted 500", code)
	}
	resp := h.do(http.MethodGet, "app.test", "/", nil)
	body := readAll(t, resp)
	if resp.StatusCode != 503 || body != "<h1>page 503</h1>" || resp.Header.Get(HeaderDiagnostic) != "circuit-open" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("open: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if hits.Load() != 1 {
		t.Fatalf("backend saw %d requests, want 1", hits.Load())
	}
}

// The page request carries the forwarding fields the client's request
// would: from a trusted proxy, its X-Forwarded-For with the peer
// appended once.
func TestErrorPagesForwardingFields(t *testing.T) {
	h := newHarness(t, Options{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	var xff, xfh atomic.Value
	pages := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		xff.Store(strings.Join(r.Header.Values("X-Forwarded-For"), "|"))
		xfh.Store(r.Header.Get("X-Forwarded-Host"))
		_, _ = io.WriteString(w, "page")
	})
	h.set("docker", withErrors(ep("app", appBackend(t)), "5xx", "pages"), ep("pages", pages))
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/status/500", nil)
	req.Host = "app.test"
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 500 || body != "page" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got := xff.Load(); got != "203.0.113.9, 127.0.0.1" || xfh.Load() != "app.test" {
		t.Fatalf("page request X-Forwarded-For %q, X-Forwarded-Host %q", got, xfh.Load())
	}
}

// The page request never carries the client's credentials: the app's
// backend gets Authorization, Proxy-Authorization and Cookie, the pages
// backend none of them.
func TestErrorPagesDropCredentials(t *testing.T) {
	h := newHarness(t, Options{})
	creds := []string{"Authorization", "Proxy-Authorization", "Cookie"}
	var appGot, pagesGot atomic.Value
	seen := func(r *http.Request) string {
		var got []string
		for _, k := range creds {
			if v := r.Header.Values(k); len(v) > 0 {
				got = append(got, k+"="+strings.Join(v, "|"))
			}
		}
		return strings.Join(got, ",")
	}
	app := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		appGot.Store(seen(r))
		w.WriteHeader(http.StatusInternalServerError)
	})
	pages := handlerBackend(t, func(w http.ResponseWriter, r *http.Request) {
		pagesGot.Store(seen(r))
		_, _ = io.WriteString(w, "page")
	})
	h.set("docker", withErrors(ep("app", app), "5xx", "pages"), ep("pages", pages))
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
	req.Host = "app.test"
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("Proxy-Authorization", "Basic cHJveHk6cHc=")
	req.Header.Set("Cookie", "session=abc")
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(t, resp); resp.StatusCode != 500 || body != "page" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	if got := pagesGot.Load(); got != "" {
		t.Fatalf("the pages backend got %q", got)
	}
	if got, _ := appGot.Load().(string); !strings.Contains(got, "Authorization=Bearer s3cret") || !strings.Contains(got, "Cookie=session=abc") {
		t.Fatalf("the app backend got %q, want the client's credentials", got)
	}
}
