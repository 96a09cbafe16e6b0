package proxy

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// fileRoute is route id (host id.test) with the error pages of labels,
// decoded as a provider decodes them, answered by the app backend.
func fileRoute(t *testing.T, id string, labels map[string]string) config.Entrypoint {
	t.Helper()
	labels["host"] = id + ".test"
	cfg, ds := config.DecodeLabels(labels, diagnostics.Source{Provider: "docker", ObjectID: id}, func(f string) string { return "levee.http." + id + "." + f })
	if len(ds) != 0 {
		t.Fatalf("labels %v: %v", labels, ds)
	}
	e := ep(id, appBackend(t))
	e.Transform = cfg.Entrypoint.Transform
	return e
}

// errors.file serves the file for every listed status, with the content
// type of its extension (or sniffed when it has none) and the original
// status; the file is read when the route is built, not per request.
func TestErrorPagesFromAFile(t *testing.T) {
	dir := t.TempDir()
	html, plain := filepath.Join(dir, "error.html"), filepath.Join(dir, "oops")
	if err := os.WriteFile(html, []byte("<h1>from the file</h1>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, []byte("plain oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, router.Options{ErrorPagesDir: dir}, Options{})
	h.set("docker", fileRoute(t, "app", map[string]string{"errors.status": "404,5xx", "errors.file": html}),
		fileRoute(t, "other", map[string]string{"errors.status": "5xx", "errors.file": plain}))

	for _, code := range []string{"503", "404", "500"} {
		resp := h.do(http.MethodGet, "app.test", "/status/"+code, nil)
		body := readAll(t, resp)
		if resp.Status[:3] != code || body != "<h1>from the file</h1>" || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Fatalf("%s: got %s %q %v", code, resp.Status, body, resp.Header)
		}
		if resp.Header.Get("X-App-Secret") != "" || resp.Header.Get("Retry-After") != "7" || resp.ContentLength != int64(len(body)) {
			t.Fatalf("%s: headers %v, length %d", code, resp.Header, resp.ContentLength)
		}
	}
	resp := h.do(http.MethodGet, "other.test", "/status/502", nil)
	if body := readAll(t, resp); resp.StatusCode != 502 || body != "plain oops" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("sniffed: got %d %q %v", resp.StatusCode, body, resp.Header)
	}
	resp = h.do(http.MethodGet, "app.test", "/status/403", nil)
	if body := readAll(t, resp); resp.StatusCode != 403 || !strings.HasPrefix(body, "SECRET") {
		t.Fatalf("unlisted: got %d %q", resp.StatusCode, body)
	}
	resp = h.do(http.MethodHead, "app.test", "/status/503", nil)
	if body := readAll(t, resp); resp.StatusCode != 503 || body != "" || resp.ContentLength != int64(len("<h1>from the file</h1>")) {
		t.Fatalf("HEAD: got %d %q length %d", resp.StatusCode, body, resp.ContentLength)
	}

	if err := os.WriteFile(html, []byte("changed"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp = h.do(http.MethodGet, "app.test", "/status/503", nil)
	if body := readAll(t, resp); body != "<h1>from the file</h1>" {
		t.Fatalf("read per request: got %q", body)
	}
}

// A file that cannot be used is a diagnostic on the route's errors.file
// (W088, or W089 past 1 MiB) and leaves it without error pages: the
// original answer passes, it is never refused.
func TestErrorPagesFileDiagnostics(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.html")
	if err := os.WriteFile(big, make([]byte, config.MaxErrorFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(dir, "secret.html")
	if err := os.WriteFile(unreadable, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	// A page file outside the pages directory, directly or through a
	// symbolic link inside it, is never served: the labels' author could
	// publish any file Levee can read.
	outside := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(outside, []byte("PRIVATE KEY"), 0o644); err != nil {
		t.Fatal(err)
	}
	escape := filepath.Join(dir, "escape.html")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "page.html")
	if err := os.WriteFile(page, []byte("<p>page</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		code       diagnostics.Code
		pagesDir   string
	}{
		{"missing", filepath.Join(dir, "none.html"), diagnostics.ErrorFileUnusable, dir},
		{"directory", dir, diagnostics.ErrorFileUnusable, dir},
		{"fifo", fifo, diagnostics.ErrorFileUnusable, dir},
		{"too large", big, diagnostics.ErrorFileTooLarge, dir},
		{"outside the pages directory", outside, diagnostics.ErrorFileUnusable, dir},
		{"dot-dot out of the pages directory", dir + "/../" + filepath.Base(filepath.Dir(outside)) + "/key.pem", diagnostics.ErrorFileUnusable, dir},
		{"symbolic link out of the pages directory", escape, diagnostics.ErrorFileUnusable, dir},
		{"no pages directory", page, diagnostics.ErrorFileUnusable, ""},
	}
	if os.Geteuid() != 0 {
		cases = append(cases, struct {
			name, path string
			code       diagnostics.Code
			pagesDir   string
		}{"unreadable", unreadable, diagnostics.ErrorFileUnusable, dir})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarnessWith(t, router.Options{ErrorPagesDir: c.pagesDir}, Options{})
			h.set("docker", fileRoute(t, "app", map[string]string{"errors.status": "5xx", "errors.file": c.path}))
			resp := h.do(http.MethodGet, "app.test", "/status/503", nil)
			if body := readAll(t, resp); resp.StatusCode != 503 || !strings.HasPrefix(body, "SECRET") || resp.Header.Get("X-App-Secret") != "stack" {
				t.Fatalf("got %d %q %v, want the original answer", resp.StatusCode, body, resp.Header)
			}
			var got []diagnostics.Diagnostic
			for _, d := range h.r.Diagnostics() {
				if d.Key == "errors.file" && d.Source.ObjectID == "app" {
					got = append(got, d)
				}
			}
			if len(got) != 1 || got[0].Code != c.code {
				t.Fatalf("diagnostics on errors.file: %v, want one %s", got, c.code)
			}
		})
	}
}

// An edited page file is served once the route looks at it again (at most
// a second after the edit, by the router's clock), without a rebuild; an
// edit that cannot be used keeps the last good page.
func TestErrorPagesFileEdited(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "error.html")
	if err := os.WriteFile(path, []byte("<p>first</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	clock := newFakeClock()
	h := newHarnessWith(t, router.Options{Clock: clock, ErrorPagesDir: dir}, Options{})
	h.set("docker", fileRoute(t, "app", map[string]string{"errors.status": "5xx", "errors.file": path}))
	page := func() string {
		t.Helper()
		resp := h.do(http.MethodGet, "app.test", "/status/502", nil)
		body := readAll(t, resp)
		if resp.StatusCode != 502 {
			t.Fatalf("status %d, want 502", resp.StatusCode)
		}
		return body
	}
	if got := page(); got != "<p>first</p>" {
		t.Fatalf("page %q", got)
	}
	if err := os.WriteFile(path, []byte("<p>second, longer</p>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := page(); got != "<p>first</p>" {
		t.Fatalf("page %q before the recheck interval, want the one read", got)
	}
	clock.Advance(time.Second)
	if got := page(); got != "<p>second, longer</p>" {
		t.Fatalf("page %q after the edit and a second, want the edited one", got)
	}
	if err := os.WriteFile(path, make([]byte, config.MaxErrorFileBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	if got := page(); got != "<p>second, longer</p>" {
		t.Fatalf("page %q after an edit over the limit, want the last good one", got)
	}
}
