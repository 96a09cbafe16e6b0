package router

import (
	"net/url"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// A case-insensitive route is matched in every spelling a case-insensitive
// backend reads as its prefix, ahead of the open route beside it, and only
// there.
func TestMatchCaseInsensitivePath(t *testing.T) {
	admin := route("admin", "/admin", "h.test")
	admin.PathCaseInsensitive = true
	open := route("open", "/", "h.test")
	public := route("public", "/admin/public", "h.test") // case-sensitive, deeper
	other := route("other", "/Docs", "h.test")
	other.PathCaseInsensitive = true
	s, diags := NewSnapshot([]config.Entrypoint{admin, open, public, other})
	if len(diags) != 0 {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	cases := []struct{ path, want string }{
		{"/admin", "admin"},
		{"/ADMIN", "admin"},
		{"/Admin/users", "admin"},
		{"/admin.", "admin"},
		{"/admin. ./users", "admin"},
		{"/admin /users", "admin"},
		{"/aDmIn...", "admin"},
		{"/admin/public", "public"},
		{"/admin/public/x", "public"},
		{"/ADMIN/public", "admin"}, // the open deeper route is case-sensitive
		{"/admin/PUBLIC", "admin"},
		{"/docs/x", "other"},
		{"/DOCS", "other"},
		{"/adm\u0131n", "admin"}, // dotless ı: "I" in upper case, as Windows compares
		{"/doc\u017F", "other"},  // long s: "S" in upper case
		{"/adminx", "open"},
		{"/admin.x", "open"},
		{"/", "open"},
	}
	for _, c := range cases {
		if got := matchID(s, "GET", "h.test", c.path); got != c.want {
			t.Errorf("Match(%q) = %q, want %q", c.path, got, c.want)
		}
	}
}

// A case-insensitive route's pathRegex sees the folded path: a spelling
// does not pass the filter to reach the open route beside it.
func TestCaseInsensitiveRegexSeesTheFoldedPath(t *testing.T) {
	guard := route("guard", "/", "h.test")
	guard.PathCaseInsensitive, guard.PathRegex, guard.Priority = true, `^/Admin(/|$)`, 10
	s, _ := NewSnapshot([]config.Entrypoint{guard, route("open", "/", "h.test")})
	for path, want := range map[string]string{"/admin": "guard", "/ADMIN/x": "guard", "/admin./x": "guard", "/Admin ": "guard", "/adminx": "open", "/": "open"} {
		if got := matchID(s, "GET", "h.test", path); got != want {
			t.Errorf("Match(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestMatchCaseInsensitiveDoesNotAllocate(t *testing.T) {
	admin := route("admin", "/admin", "h.test")
	admin.PathCaseInsensitive = true
	s, _ := NewSnapshot([]config.Entrypoint{admin, route("open", "/", "h.test")})
	allocs := testing.AllocsPerRun(100, func() {
		if matchID(s, "GET", "h.test", "/ADMIN/users/1/with/a/path/longer/than/thirty-two/bytes") != "admin" {
			panic("no match")
		}
	})
	if allocs != 0 {
		t.Errorf("Match allocates %.1f times", allocs)
	}
}

// stripPrefix on a case-insensitive route removes the matched segments
// whatever their spelling.
func TestRewriteStripsCaseInsensitivePrefix(t *testing.T) {
	ep := route("admin", "/admin/api", "h.test")
	ep.PathCaseInsensitive, ep.StripPrefix = true, true
	s, _ := NewSnapshot([]config.Entrypoint{ep})
	for _, c := range []struct{ path, raw, want, wantRaw string }{
		{"/ADMIN/Api/x/y", "", "/x/y", ""},
		{"/admin./api", "", "/", ""},
		{"/Admin/API/a b", "/Admin/API/a%20b", "/a b", "/a%20b"},
	} {
		r := s.Match("GET", "h.test", c.path)
		if r == nil {
			t.Fatalf("%s: no match", c.path)
		}
		path, raw := r.Rewrite(&url.URL{Path: c.path, RawPath: c.raw})
		if path != c.want || raw != c.wantRaw {
			t.Errorf("Rewrite(%q) = %q, %q; want %q, %q", c.path, path, raw, c.want, c.wantRaw)
		}
	}
}
