package diagnostics

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/diagnostics.md from the catalogue")

const docPath = "../docs/diagnostics.md"

// TestMarkdownInSync fails when docs/diagnostics.md is not what the
// catalogue generates; run with -update to rewrite it.
func TestMarkdownInSync(t *testing.T) {
	want := Markdown()
	if *update {
		if err := os.WriteFile(docPath, want, 0o644); err != nil {
			t.Fatalf("write %s: %v", docPath, err)
		}
	}
	got, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatalf("read %s: %v (generate it: go test ./diagnostics -run TestMarkdownInSync -update)", docPath, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date: go test ./diagnostics -run TestMarkdownInSync -update", docPath)
	}
	for _, e := range Catalogue() {
		if !bytes.Contains(got, []byte("## "+string(e.Code)+"\n")) {
			t.Errorf("%s has no section for %s", docPath, e.Code)
		}
	}
}
