package config

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/labels.md from the field table")

const labelsDoc = "../../docs/labels.md"

// TestFieldsMarkdownInSync fails when docs/labels.md is not what the field
// table generates; run with -update to rewrite it.
func TestFieldsMarkdownInSync(t *testing.T) {
	want := FieldsMarkdown()
	if *updateDocs {
		if err := os.WriteFile(labelsDoc, want, 0o644); err != nil {
			t.Fatalf("write %s: %v", labelsDoc, err)
		}
	}
	got, err := os.ReadFile(labelsDoc)
	if err != nil {
		t.Fatalf("read %s: %v (generate it: go test ./router/config -run TestFieldsMarkdownInSync -update)", labelsDoc, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date: go test ./router/config -run TestFieldsMarkdownInSync -update", labelsDoc)
	}
	for _, f := range Fields() {
		if !strings.Contains(string(got), "| `"+f.Label+"`") {
			t.Errorf("%s does not document %s", labelsDoc, f.Label)
		}
	}
}
