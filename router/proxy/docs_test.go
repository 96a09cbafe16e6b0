package proxy

import (
	"os"
	"strings"
	"testing"
)

// Every X-Levee-Diagnostic value has its row in docs/operations.md ("When
// Levee answers itself"), so clients and log pipelines can look it up.
func TestOperationsDocListsEveryDiagnostic(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	values := []string{DiagnosticBadRequest} // set by levee serve on the HTTP server's refusals
	for v := range valueDiagnostic {
		values = append(values, v)
	}
	for _, v := range values {
		if !strings.Contains(string(doc), "| `"+v+"` |") {
			t.Errorf("docs/operations.md has no row for X-Levee-Diagnostic %q", v)
		}
	}
}
