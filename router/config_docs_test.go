package router

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/labels.md from the field table")

const labelsDoc = "../docs/labels.md"

// TestFieldsMarkdownInSync fails when docs/labels.md is not what the field
// table generates; run with -updateDocs to rewrite it.
func TestFieldsMarkdownInSync(t *testing.T) {
	want := FieldsMarkdown()
	if *updateDocs {
		if err := os.WriteFile(labelsDoc, want, 0o644); err != nil {
			t.Fatalf("write %s: %v", labelsDoc, err)
		}
	}
	got, err := os.ReadFile(labelsDoc)
	if err != nil {
		t.Fatalf("read %s: %v (generate it: go test ./router -run TestFieldsMarkdownInSync -update)", labelsDoc, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date: go test ./router -run TestFieldsMarkdownInSync -update", labelsDoc)
	}
	for _, f := range Fields() {
		if !strings.Contains(string(got), "| `"+f.Label+"`") {
			t.Errorf("%s does not document %s", labelsDoc, f.Label)
		}
	}
}

// Every X-Levee-Diagnostic value has its row in docs/operations.md ("When
// Levee answers itself"), so clients and log pipelines can look it up.
func TestOperationsDocListsEveryDiagnostic(t *testing.T) {
	doc, err := os.ReadFile("../docs/operations.md")
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
