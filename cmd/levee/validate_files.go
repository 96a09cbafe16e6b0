package main

import (
	"fmt"
	"sort"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/file"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// fileRows checks config files as the file provider of levee serve
// (--config-dir, --config-file) reads them: one row per entrypoint (the
// file as the object, the entrypoint as its service), and one row without
// an entrypoint, skipped, for what a file could not give (a syntax error,
// W037; an unreadable file, W026; an entrypoint the API would refuse,
// W038). A diagnostic about a whole file goes to each of its rows.
func fileRows(dirs, files []string, listeners []*router.Listener, pagesDir string) []serviceReport {
	loaded := file.Load(file.Options{Dirs: dirs, Files: files})
	var eps []config.Entrypoint
	for _, e := range loaded.Entries {
		eps = append(eps, e.Entrypoint)
	}
	routeDiags := append(router.BackendTLSDiagnostics(eps), router.ErrorPageDiagnostics(eps, pagesDir)...)
	if listeners != nil {
		routeDiags = append(router.ListenerDiagnostics(eps, listeners), routeDiags...)
	}

	type key struct{ file, service string }
	rows := map[key]*serviceReport{}
	row := func(k key) *serviceReport {
		if rows[k] == nil {
			rows[k] = &serviceReport{Provider: config.SourceFile, Container: k.file, Service: k.service, Diagnostics: []diagnostics.Diagnostic{}}
		}
		return rows[k]
	}
	for _, e := range loaded.Entries {
		ep := e.Entrypoint
		r := row(key{e.File, ep.Name})
		r.Entrypoint, r.Hosts = ep.ID, ep.Hosts
		var addrs []string
		for _, b := range ep.Backends {
			addrs = append(addrs, fmt.Sprintf("%s:%d", b.Address, b.Port))
		}
		r.Backend = strings.Join(addrs, ", ")
	}
	var fileLevel []diagnostics.Diagnostic
	for _, d := range loaded.Diagnostics {
		if d.Source.Service == "" {
			fileLevel = append(fileLevel, d)
			continue
		}
		r := row(key{d.Source.ObjectName, d.Source.Service})
		r.Diagnostics = append(r.Diagnostics, d)
	}
	for _, d := range fileLevel {
		attached := false
		for k, r := range rows {
			if k.file == d.Source.ObjectName && r.Entrypoint != "" {
				r.Diagnostics = append(r.Diagnostics, d)
				attached = true
			}
		}
		if !attached {
			r := row(key{d.Source.ObjectName, ""})
			r.Diagnostics = append(r.Diagnostics, d)
		}
	}
	for _, d := range routeDiags {
		for _, r := range rows {
			if r.Entrypoint == d.Source.ObjectID {
				r.Diagnostics = append(r.Diagnostics, d)
			}
		}
	}
	out := make([]serviceReport, 0, len(rows))
	for _, r := range rows {
		r.Status = statusOf(r)
		diagnostics.Sort(r.Diagnostics)
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Container != out[j].Container {
			return out[i].Container < out[j].Container
		}
		return out[i].Service < out[j].Service
	})
	return out
}

// addRows appends rows to a report and counts them.
func addRows(rep *validateReport, rows []serviceReport) {
	if rep.Summary == nil {
		rep.Summary = map[string]int{statusRouted: 0, statusDegraded: 0, statusDenies: 0, statusSkipped: 0, statusIgnored: 0}
	}
	for _, r := range rows {
		rep.Services = append(rep.Services, r)
		rep.Summary[r.Status]++
	}
}
