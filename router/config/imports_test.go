package config

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// The data flows provider → config → router: this package, and the
// module's packages it imports, must import neither the router nor the
// data plane's HTTP stack or metrics, or every provider and `levee
// validate` would link the proxy by decoding a config.
func TestImportsNothingOfTheDataPlane(t *testing.T) {
	const module = "github.com/levee-proxy/levee/"
	forbidden := func(path string) bool {
		return path == "net/http" || strings.HasPrefix(path, "net/http/") ||
			strings.HasPrefix(path, "github.com/prometheus/") ||
			path == module+"router" ||
			strings.HasPrefix(path, module+"router/") && path != module+"router/config"
	}
	seen := map[string]bool{}
	var walk func(dir, importPath string)
	walk = func(dir, importPath string) {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", importPath, err)
		}
		for _, imp := range pkg.Imports {
			if forbidden(imp) {
				t.Errorf("%s imports %s", importPath, imp)
			}
			if strings.HasPrefix(imp, module) && !seen[imp] {
				seen[imp] = true
				walk(filepath.Join("..", "..", strings.TrimPrefix(imp, module)), imp)
			}
		}
	}
	walk(".", module+"router/config")
}
