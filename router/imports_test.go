package router

import (
	"go/build"
	"strings"
	"testing"
)

// TestDoesNotImportTheRequestPath keeps the data flowing one way: the
// request path (router/proxy) reads the router, never the reverse.
func TestDoesNotImportTheRequestPath(t *testing.T) {
	const proxy = "github.com/levee-proxy/levee/router/proxy"
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == proxy || strings.HasPrefix(imp, proxy+"/") {
			t.Errorf("router imports %s", imp)
		}
	}
}
