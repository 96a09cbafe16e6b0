package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// statusOf is a row's status: ignored or skipped when it has no
// entrypoint, else routed, degraded (a warning: a field fell back) or
// denies (an error: an access policy Levee cannot read).
func statusOf(r *serviceReport) string {
	if r.Entrypoint == "" {
		// A row with information only (I003: a container labelled for
		// Traefik) is a container Levee does not route, not a failure.
		for _, d := range r.Diagnostics {
			if d.Severity >= diagnostics.Warn {
				return statusSkipped
			}
		}
		return statusIgnored
	}
	status := statusRouted
	for _, d := range r.Diagnostics {
		switch {
		case d.Severity == diagnostics.Error:
			// Routed with an error: an access policy Levee cannot read
			// makes the route deny every request.
			return statusDenies
		case d.Severity == diagnostics.Warn:
			status = statusDegraded
		}
	}
	return status
}

// validateExit is validate's exit status: 1 when a diagnostic is an error
// (a service not routed, a route that denies every request) or, strict, a
// warning; else 0.
func validateExit(rep validateReport, strict bool) int {
	if rep.Summary[statusSkipped] > 0 {
		return 1
	}
	for _, r := range rep.Services {
		for _, d := range r.Diagnostics {
			if d.Severity == diagnostics.Error || strict && d.Severity == diagnostics.Warn {
				return 1
			}
		}
	}
	return 0
}

func writeText(w io.Writer, rep validateReport) {
	ws, wc, wv := 0, 0, 1
	for _, r := range rep.Services {
		ws, wc, wv = max(ws, len(r.Status)), max(wc, len(r.Container)), max(wv, len(r.Service))
	}
	for _, r := range rep.Services {
		svc := r.Service
		if svc == "" {
			svc = "-"
		}
		detail := strings.Join(r.Hosts, ",")
		if r.Backend != "" {
			detail += " -> " + r.Backend
		}
		if r.Status == statusIgnored {
			detail = "(not enabled)"
		}
		switch r.Provider {
		case config.SourceSwarm:
			detail += " [swarm]"
		case config.SourceFile:
			detail += " [file]"
		}
		line := fmt.Sprintf("%-*s  %-*s  %-*s  %s", ws, r.Status, wc, r.Container, wv, svc, detail)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
		for _, d := range r.Diagnostics {
			fmt.Fprintf(w, "%*s  %s\n", ws, "", diagnosticLine(d))
		}
	}
	fmt.Fprintf(w, "\n%d routed, %d degraded, ", rep.Summary[statusRouted], rep.Summary[statusDegraded])
	if n := rep.Summary[statusDenies]; n > 0 {
		fmt.Fprintf(w, "%d denying every request, ", n)
	}
	fmt.Fprintf(w, "%d skipped, %d not enabled\n", rep.Summary[statusSkipped], rep.Summary[statusIgnored])
	if rep.Swarm {
		fmt.Fprintln(w, "labels are read by the docker provider (levee serve); deploy.labels, the rows marked [swarm], by the swarm provider (levee serve --swarm)")
	}
	if rep.Hint != "" {
		fmt.Fprintf(w, "hint: %s\n", rep.Hint)
	}
}

// diagnosticLine renders a diagnostic without its object (the row names it).
func diagnosticLine(d diagnostics.Diagnostic) string {
	d.Source.ObjectName = ""
	return d.String()
}
