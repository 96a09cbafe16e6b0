package pathform

import (
	"net/url"
	"testing"
)

// A query with a fragment or a control byte cannot be written on an
// HTTP/1.1 request line: refused, never forwarded.
func TestQueryWithFragmentIsRefused(t *testing.T) {
	for _, q := range []string{"a=1#frag", "a=1\x00", "a b"} {
		u := &url.URL{Path: "/p", RawQuery: q}
		if f := Normalize(u, false); f != faultQuery {
			t.Errorf("query %q: %q, want %q", q, f, faultQuery)
		}
	}
	if f := Normalize(&url.URL{Path: "/p", RawQuery: "a=1&b=%23;c"}, false); f != None {
		t.Errorf("an ordinary query refused: %q", f)
	}
}

func TestNormalizeACleanPathDoesNotAllocate(t *testing.T) {
	u := &url.URL{Path: "/api/v1/items/42", RawQuery: "q=1&r=two"}
	allocs := testing.AllocsPerRun(100, func() {
		if Normalize(u, false) != None {
			panic("refused")
		}
	})
	if allocs != 0 {
		t.Fatalf("Normalize allocates %.1f times for a clean path", allocs)
	}
}

// BenchmarkNormalize is the cost the path rules add to every request
// whose path is already in normal form.
func BenchmarkNormalize(b *testing.B) {
	u := &url.URL{Path: "/api/v1/items/42", RawQuery: "q=1&r=two"}
	b.ReportAllocs()
	for b.Loop() {
		if Normalize(u, false) != None {
			b.Fatal("refused")
		}
	}
}

// A path Levee makes itself (a rewrite's output) must already be in the
// normal form: what Normalize would refuse or rewrite, Check refuses.
func TestCheckHoldsMadePathsToTheNormalForm(t *testing.T) {
	for raw, ok := range map[string]bool{
		"/api/v1/items":   true,
		"/a%20b/c":        true,
		"/":               true,
		"//admin/users":   false, // a run of slashes: nginx reads /admin/users
		"/admin;x/secret": false, // a ; parameter: Servlet reads /admin/secret
		"/x/../admin":     false,
		"/x/%2e%2e/admin": false,
		"/a%2Fb":          false,
		"/a\\b":           false,
		"relative/path":   false,
		"/bad%zzescape":   false,
		"/%00":            false,
	} {
		if got := Check(raw) == None; got != ok {
			t.Errorf("Check(%q) = %q, want ok=%v", raw, Check(raw), ok)
		}
	}
}
