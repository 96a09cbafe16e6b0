package traffic

import (
	"go/build"
	"strings"
	"testing"
)

// The ring is standard library only: the request path and the router
// share it without it depending on either.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
			t.Errorf("router/traffic imports %s", imp)
		}
	}
}
