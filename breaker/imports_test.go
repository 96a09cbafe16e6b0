package breaker

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsOnlyTheStandardLibrary keeps package breaker standalone: it
// imports only the standard library. The rule is for this package itself;
// breaker/fleet below it is the fleet store and uses Redis.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		// A standard library path has no dot in its first element.
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("breaker imports %s, not of the standard library", imp)
		}
	}
}
