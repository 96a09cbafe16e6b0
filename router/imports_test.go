package router

import (
	"go/build"
	"strings"
	"testing"
)

// TestDoesNotImportTheRequestPath keeps the data flowing one way: the
// request path (router/proxy) and the HTTP packages it uses
// (router/httpx/...) read the router, never the reverse.
func TestDoesNotImportTheRequestPath(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		for _, below := range []string{"github.com/levee-proxy/levee/router/proxy", "github.com/levee-proxy/levee/router/httpx"} {
			if imp == below || strings.HasPrefix(imp, below+"/") {
				t.Errorf("router imports %s", imp)
			}
		}
	}
}
