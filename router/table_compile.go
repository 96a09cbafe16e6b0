package router

// Compiling one entrypoint into a Route: its match key, path regex (with the
// cache that keeps regexes across rebuilds) and diagnostics source.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// regexCache keeps compiled path regexes across rebuilds: compiling is the
// only expensive step of a rebuild and the expressions rarely change.
type regexCache struct {
	m map[string]*regexp.Regexp
}

func (c *regexCache) compile(expr string) (*regexp.Regexp, error) {
	if re, ok := c.m[expr]; ok {
		return re, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("compiling path regex %q: %w", expr, err)
	}
	if c.m == nil {
		c.m = make(map[string]*regexp.Regexp)
	}
	c.m[expr] = re
	return re, nil
}

// retain drops expressions no route uses any more.
func (c *regexCache) retain(routes []*Route) {
	if len(c.m) == 0 {
		return
	}
	used := make(map[string]bool, len(c.m))
	for _, r := range routes {
		if r.ep.PathRegex != "" {
			used[regexExpr(&r.ep)] = true
		}
	}
	for k := range c.m {
		if !used[k] {
			delete(c.m, k)
		}
	}
}

// compileRoute prepares one entrypoint for matching. The validator has
// normalised it already; a regex that still does not compile (it cannot
// from the one validator, only from a Go caller that skipped it) is
// ignored as W030 says.
func compileRoute(ep *config.Entrypoint, rc *regexCache) (*Route, []diagnostics.Diagnostic) {
	r := &Route{ep: *ep, prefix: prefixKey(ep.Path), methods: ep.Methods, folded: ep.PathCaseInsensitive}
	if ep.PathRegex != "" {
		re, err := rc.compile(regexExpr(ep))
		if err != nil {
			r.ep.PathRegex = ""
			return r, []diagnostics.Diagnostic{diagnostics.New(diagnostics.BadPathRegex, sourceOf(*ep),
				"pathRegex", ep.PathRegex, "(none)", fmt.Sprintf("invalid path regex ignored: %v", err), "")}
		}
		r.regex = re
	}
	return r, nil
}

// prefixKey turns a configured path into the table's key: "/api/" and
// "/api" are the same segment-aware prefix.
func prefixKey(p string) string {
	if p == "" {
		return "/"
	}
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	return p
}

func sourceOf(ep config.Entrypoint) diagnostics.Source {
	return diagnostics.Source{Provider: ep.Source, ObjectID: ep.ID, ObjectName: ep.Name, Service: ep.Name}
}
