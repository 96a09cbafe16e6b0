package api

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsNothingOfTheDataPlane keeps the API on the read model: it
// consumes the config model and the router's status views, never the
// router, its request path or its HTTP machinery, so that data flows one
// way (provider → config → router → proxy → backend). Test files may use
// the real router. The rule covers the API's store (api/store) too.
func TestImportsNothingOfTheDataPlane(t *testing.T) {
	const module = "github.com/levee-proxy/levee/"
	for _, dir := range []string{".", "store"} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			if imp == module+"router" || imp == module+"router/proxy" ||
				strings.HasPrefix(imp, module+"router/proxy/") || strings.HasPrefix(imp, module+"router/httpx") {
				t.Errorf("api (%s) imports %s", dir, imp)
			}
		}
	}
}
