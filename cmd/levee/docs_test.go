package main

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

// Every serve flag and its environment variable are documented in
// docs/operations.md, so the doc cannot drift from the code.
func TestOperationsDocListsEveryFlag(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	var cfg serveConfig
	fs := newServeFlags(&cfg, &bytes.Buffer{})
	fs.VisitAll(func(f *flag.Flag) {
		row := "| `--" + f.Name + "` | `" + envName(f.Name) + "` |"
		if !bytes.Contains(doc, []byte(row)) {
			t.Errorf("docs/operations.md has no row starting %s", row)
		}
	})
	for _, line := range strings.Split(string(doc), "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		name := strings.TrimPrefix(strings.SplitN(line, "`", 3)[1], "--")
		if fs.Lookup(name) == nil {
			t.Errorf("docs/operations.md documents --%s, which does not exist", name)
		}
	}
}
