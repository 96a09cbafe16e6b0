package dashboard

import (
	"go/build"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// Every file is served under Prefix with the headers that keep the page to
// itself, JavaScript modules with a JavaScript type (browsers refuse a
// module served otherwise).
func TestHandlerServesAssetsWithHeaders(t *testing.T) {
	h := Handler()
	for path, ctype := range map[string]string{
		"/dashboard/":          "text/html",
		"/dashboard/app.js":    "text/javascript",
		"/dashboard/style.css": "text/css",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("GET %s: %d", path, rec.Code)
			continue
		}
		if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, ctype) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, got, ctype)
		}
		for k, v := range securityHeaders {
			if got := rec.Header().Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", path, k, got, v)
			}
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/dashboard/nope.js", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("a missing file: %d, want 404", rec.Code)
	}
}

// The Content Security Policy allows no inline script or style, so the
// page must have none; every module a file imports must exist; and no
// script builds HTML from strings (values from the API are text, never
// markup).
func TestAssetsFitThePolicy(t *testing.T) {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		t.Fatal(err)
	}
	html, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		t.Fatal(err)
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).Match(html) || regexp.MustCompile(`\son[a-z]+=|\sstyle=|<style`).Match(html) {
		t.Error("index.html has inline script, style or handlers, which the policy blocks")
	}
	imports := regexp.MustCompile(`from "\./([a-z]+\.js)"`)
	err = fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(path, ".js") {
			return err
		}
		src, err := fs.ReadFile(sub, path)
		if err != nil {
			return err
		}
		for _, m := range imports.FindAllSubmatch(src, -1) {
			if _, err := fs.Stat(sub, string(m[1])); err != nil {
				t.Errorf("%s imports %s, which is not embedded", path, m[1])
			}
		}
		if regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write`).Match(src) {
			t.Errorf("%s writes HTML from strings", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The dashboard is files and nothing else: it imports only the standard
// library, so everything it shows comes through the API like any client's.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			t.Errorf("api/dashboard imports %s", imp)
		}
	}
}
