package diagnostics

import (
	"bytes"
	"fmt"
	"strings"
)

// Markdown renders the catalogue as docs/diagnostics.md. The file is
// generated from this function and a test keeps it in sync, so the docs can
// never describe a code differently from `levee explain`.
func Markdown() []byte {
	var b bytes.Buffer
	b.WriteString("<!-- Code generated from the diagnostics catalogue (diagnostics.Markdown); DO NOT EDIT. -->\n")
	b.WriteString("<!-- Regenerate: go test ./diagnostics -run TestMarkdownInSync -update -->\n\n")
	b.WriteString("# Diagnostics\n\n")
	b.WriteString("Levee never drops a whole container or payload for one bad value. Every problem it finds in labels or API\n")
	b.WriteString("payloads is a *diagnostic* with a code from this catalogue, the key (label key or JSON path), the bad value and\n")
	b.WriteString("the fallback that applies instead. Severities:\n\n")
	b.WriteString("- **error**: that service is not routed (other services are unaffected);\n")
	b.WriteString("- **warn**: a field fell back to its default; the service is routed;\n")
	b.WriteString("- **info**: a default was applied or a value normalised; nothing is wrong.\n\n")
	b.WriteString("Diagnostics appear in the logs (one event when they appear or change), in the `levee_diagnostics{code,severity}`\n")
	b.WriteString("gauge, in the API (`GET /diagnostics`), and in `levee validate`. `levee explain CODE` prints an entry below.\n")
	b.WriteString("Codes never change meaning once published; numbers follow Sōzune's where the concept is the same.\n\n")
	b.WriteString("| code | severity | title |\n|---|---|---|\n")
	for _, e := range Catalogue() {
		fmt.Fprintf(&b, "| [%s](#%s) | %s | %s |\n", e.Code, strings.ToLower(string(e.Code)), e.Severity, e.Title)
	}
	for _, e := range Catalogue() {
		fmt.Fprintf(&b, "\n## %s\n\n", e.Code)
		fmt.Fprintf(&b, "**%s** (%s)\n\n", e.Title, e.Severity)
		fmt.Fprintf(&b, "- **Effect:** %s\n", e.Effect)
		fmt.Fprintf(&b, "- **Fix:** %s\n", e.Fix)
		fmt.Fprintf(&b, "- **Example:** `%s`\n", e.Example)
	}
	return b.Bytes()
}
