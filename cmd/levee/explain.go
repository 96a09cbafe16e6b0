package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

const explainUsage = `Usage: levee explain CODE

Prints what a diagnostic code means: its cause, the fallback Levee applies,
how to fix it and an example. Exit status 2 for an unknown code.

Codes:
`

// runExplain implements `levee explain CODE`.
func runExplain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		printExplainUsage(stdout)
		return 0
	}
	if len(args) != 1 {
		printExplainUsage(stderr)
		return 2
	}
	code := diagnostics.Code(strings.ToUpper(strings.TrimSpace(args[0])))
	e, ok := diagnostics.Lookup(code)
	if !ok {
		fmt.Fprintf(stderr, "levee explain: unknown code %q\n\n", args[0])
		printExplainUsage(stderr)
		return 2
	}
	fmt.Fprintf(stdout, "%s (%s): %s\n\n", e.Code, e.Severity, e.Title)
	fmt.Fprintf(stdout, "Effect:  %s\n", e.Effect)
	fmt.Fprintf(stdout, "Fix:     %s\n", e.Fix)
	fmt.Fprintf(stdout, "Example: %s\n", e.Example)
	return 0
}

func printExplainUsage(w io.Writer) {
	fmt.Fprint(w, explainUsage)
	for _, e := range diagnostics.Catalogue() {
		fmt.Fprintf(w, "  %s  %-5s  %s\n", e.Code, e.Severity, e.Title)
	}
}
