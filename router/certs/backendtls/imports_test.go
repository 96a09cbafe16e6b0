package backendtls

import (
	"go/build"
	"strings"
	"testing"
)

// The data plane compiles backend TLS through this package: it must not
// bring the listener's certificate store (certmagic, its logger) along.
func TestImportsOnlyTheStandardLibraryAndCertfile(t *testing.T) {
	for _, dir := range []string{".", "../certfile"} {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			first, _, _ := strings.Cut(imp, "/")
			if strings.Contains(first, ".") && imp != "github.com/levee-proxy/levee/router/certs/certfile" {
				t.Errorf("%s imports %s", pkg.ImportPath, imp)
			}
		}
	}
}
