package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

func TestExplain(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := runExplain([]string{"W024"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	e, _ := diagnostics.Lookup(diagnostics.BadCircuitBreaker)
	for _, want := range []string{"W024 (warn): " + e.Title, "Effect:  " + e.Effect, "Fix:     " + e.Fix, "Example: " + e.Example} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Every code in the catalogue (and so in docs/diagnostics.md) explains.
	for _, e := range diagnostics.Catalogue() {
		out.Reset()
		if code := runExplain([]string{strings.ToLower(string(e.Code))}, &out, &errOut); code != 0 || !strings.Contains(out.String(), e.Fix) {
			t.Errorf("explain %s: exit %d\n%s", e.Code, code, out.String())
		}
	}
}

func TestExplainErrors(t *testing.T) {
	for _, args := range [][]string{{"W999"}, {}, {"W024", "W001"}} {
		var out, errOut bytes.Buffer
		if code := runExplain(args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "W024") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and the code list", args, code, errOut.String())
		}
	}
}
