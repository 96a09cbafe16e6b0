package main

import (
	"strings"
	"testing"
)

// validate resolves the named policies a compose file declares: the
// routes that use a declared one are routed, one that uses an unknown
// name denies (E007, with the closest name), and validate exits 1.
func TestValidateNamedPolicies(t *testing.T) {
	out, _, code := validate(t, "testdata/namedpolicies.yml")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, r := range [][3]string{{"denies", "typo", "typo"}} {
		if !hasRow(out, r[0], r[1], r[2]) {
			t.Errorf("no row %v in\n%s", r, out)
		}
	}
	for _, want := range []string{"E007 error policies", "office-only", "2 routed, 0 degraded, 1 denying every request"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
