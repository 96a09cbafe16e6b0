package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
)

// ErrorPages replace the route's error answers with pages another route
// serves (Traefik's errors middleware): when the answer's status is in
// Status, the client gets the body of Route's answer to Query, with the
// original status code.
type ErrorPages struct {
	// Status is the canonical list of codes and ranges of 400-599
	// ("404,500-599"), never empty once validated.
	Status string `json:"status"`
	// Route names the route whose backends serve the pages (a label
	// service name or an API entrypoint name), resolved in the snapshot.
	// Empty when File serves them.
	Route string `json:"route,omitempty"`
	// File is the absolute path of a file that is the page for every
	// listed status, read when the route is built; empty when Route
	// serves them. Never both.
	File string `json:"file,omitempty"`
	// Query is the path asked of Route; {status} is replaced by the
	// answer's code.
	Query string `json:"query"`
	// Timeout bounds asking Route for the page.
	Timeout time.Duration `json:"timeout"`
}

// The error pages' defaults.
const (
	DefaultErrorQuery   = "/{status}.html"
	DefaultErrorTimeout = 5 * time.Second
	// ErrorStatusPlaceholder is replaced in Query by the answer's code.
	ErrorStatusPlaceholder = "{status}"
	// MaxErrorFileBytes bounds an errors.file: it is read whole when the
	// route is built and held in memory, and is a page like any other
	// (the largest page a route may send is as big).
	MaxErrorFileBytes = 1 << 20
)

// CheckErrorFile reports whether p can name an error-page file: an
// absolute path. Whether the file is there, is regular and is small
// enough is seen when the route is built.
func CheckErrorFile(p string) error {
	if !filepath.IsAbs(p) {
		return fmt.Errorf("error-page file %q: want an absolute path such as /etc/levee/pages/error.html", p)
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("error-page file %q: a path has no NUL", p)
	}
	return nil
}

// ParseErrorStatuses parses an error-page status spec: codes, ranges and
// classes ("500-599,404", "5xx"), each within 400-599. Only client and
// server errors are replaced: a 1xx, 2xx or 3xx answer carries meaning
// (RFC 9110 15) a page would destroy.
func ParseErrorStatuses(s string) (breaker.StatusSet, error) {
	set, err := breaker.ParseStatuses(s)
	if err != nil {
		return breaker.StatusSet{}, fmt.Errorf("parse error-page statuses: %w", err)
	}
	if set.IsEmpty() {
		return breaker.StatusSet{}, fmt.Errorf("parse error-page statuses %q: no status", s)
	}
	for c := 100; c < 400; c++ {
		if set.Has(c) {
			return breaker.StatusSet{}, fmt.Errorf("parse error-page statuses %q: %d is not an error (want 400-599)", s, c)
		}
	}
	return set, nil
}

// CheckErrorQuery reports whether q is a usable error-page query: an
// absolute path (RFC 9112 3.2.1 origin-form) without spaces or control
// characters, whose only placeholder is {status}.
func CheckErrorQuery(q string) error {
	if !strings.HasPrefix(q, "/") {
		return fmt.Errorf("error-page query %q: want an absolute path such as %s", q, DefaultErrorQuery)
	}
	for _, c := range q {
		if c <= ' ' || c == 0x7f {
			return fmt.Errorf("error-page query %q: spaces and control characters are not allowed", q)
		}
	}
	rest := strings.ReplaceAll(q, ErrorStatusPlaceholder, "")
	if strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("error-page query %q: the only placeholder is %s", q, ErrorStatusPlaceholder)
	}
	return nil
}

// errorPagesFields are the rows of the error pages (errors.*).
func errorPagesFields() []Field {
	return []Field{
		{Label: "errors.status", JSON: "config.errors.status", Kind: KindList, Default: "(none: error pages off)", Code: diagnostics.BadErrorStatus,
			Doc:     "The answer statuses replaced by an error page: codes, ranges and classes of 400-599. Setting it (with `errors.route` or `errors.file`) turns error pages on; Levee's own answers (502, 503, 504) are replaced too when listed.",
			Example: "500-599,404", set: setErrorStatus, get: inErrors(func(e *ErrorPages) any { return e.Status })},
		{Label: "errors.route", JSON: "config.errors.route", Kind: KindString, Default: "(none)", Code: diagnostics.ErrorServiceUnknown,
			Doc:     "The route whose backends serve the pages (Traefik's errors.service): a label service name or an API entrypoint name, as `circuitBreaker.fallback`. The page is asked with GET, through that route's breaker and balancer but not its policies; when it fails or is not a 2xx, the client gets the original answer.",
			Example: "error-pages", set: setErrorRoute, get: omitEmpty(inErrors(func(e *ErrorPages) any { return e.Route }))},
		{Label: "errors.file", JSON: "config.errors.file", Kind: KindString, Default: "(none)", Code: diagnostics.ErrorFileUnusable,
			Doc:     "An absolute path inside the directory of `--error-pages-dir` (none given: page files are off, W088): the file is the page for every listed status, instead of `errors.route` (never both, W088). It is read when the route is built, not per request: a regular file of at most 1 MiB (W089), its Content-Type from its extension or else sniffed, sent with the original status. A file that cannot be used means no error pages: the original answers pass.",
			Example: "/etc/levee/pages/error.html", set: setErrorFile, get: omitEmpty(inErrors(func(e *ErrorPages) any { return e.File }))},
		{Label: "errors.query", JSON: "config.errors.query", Kind: KindString, Default: DefaultErrorQuery, Code: diagnostics.BadErrorQuery,
			Doc:     "The path asked of the route; `{status}` is replaced by the answer's code.",
			Example: "/errors/{status}.html", set: setErrorQuery, get: inErrors(func(e *ErrorPages) any { return e.Query })},
		{Label: "errors.timeout", JSON: "config.errors.timeout", Kind: KindDuration, Default: DefaultErrorTimeout.String(), Code: diagnostics.BadErrorQuery,
			Doc:     "How long asking the route for a page may take; past it the client gets the original answer.",
			Example: "2s", set: setErrorTimeout, get: inErrors(func(e *ErrorPages) any { return e.Timeout })},
	}
}

var inErrors = group(func(ep *Entrypoint) *ErrorPages { return ep.Transform.Errors })

func (t *Transform) errorPages() *ErrorPages {
	if t.Errors == nil {
		t.Errors = &ErrorPages{Query: DefaultErrorQuery, Timeout: DefaultErrorTimeout}
	}
	return t.Errors
}

func setErrorStatus(d *draft, f *Field, key string, v any) {
	d.seeTransform(f)
	e := d.ep.Transform.errorPages()
	items, ok := decode(d, f, key, v, toList, func(items []string) error {
		_, err := ParseErrorStatuses(strings.Join(items, ","))
		return err
	})
	if ok {
		set, _ := ParseErrorStatuses(strings.Join(items, ","))
		e.Status = set.String()
	}
}

func setErrorRoute(d *draft, f *Field, key string, v any) {
	d.seeTransform(f)
	e := d.ep.Transform.errorPages()
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if strings.TrimSpace(s) == "" {
			return fmt.Errorf("want a route name")
		}
		return nil
	})
	if ok {
		e.Route = strings.TrimSpace(s)
	}
}

func setErrorFile(d *draft, f *Field, key string, v any) {
	d.seeTransform(f)
	e := d.ep.Transform.errorPages()
	if p, ok := decode(d, f, key, v, toString, func(s string) error { return CheckErrorFile(strings.TrimSpace(s)) }); ok {
		e.File = filepath.Clean(strings.TrimSpace(p))
	}
}

func setErrorQuery(d *draft, f *Field, key string, v any) {
	d.seeTransform(f)
	e := d.ep.Transform.errorPages()
	if q, ok := decode(d, f, key, v, toString, CheckErrorQuery); ok {
		e.Query = q
	}
}

func setErrorTimeout(d *draft, f *Field, key string, v any) {
	d.seeTransform(f)
	e := d.ep.Transform.errorPages()
	t, ok := decode(d, f, key, v, toDuration, func(t time.Duration) error {
		if t <= 0 {
			return fmt.Errorf("want a positive duration")
		}
		return nil
	})
	if ok {
		e.Timeout = t
	}
}

// finishErrors turns error pages off unless the statuses and one source
// of pages (the route or the file, never both) are given: half a policy
// replaces nothing, and of two sources neither is preferred. A part
// given but invalid was reported already.
func (d *draft) finishErrors() {
	e := d.ep.Transform.Errors
	if e == nil {
		return
	}
	if d.tr.seen["errors.file"] && d.tr.seen["errors.route"] {
		g := d.givenOr("errors.file", e.File)
		route := d.keyOf(fieldByLabel("errors.route"))
		d.add(diagnostics.ErrorFileUnusable, g.key, g.value, "error pages off",
			"errors.file and errors.route are both set: the pages come from one of them, the route has no error pages", "remove "+g.key+" or "+route)
		d.ep.Transform.Errors = nil
		return
	}
	if e.Status != "" && (e.Route != "" || e.File != "") {
		return
	}
	for _, label := range []string{"errors.status", "errors.route"} {
		if d.tr.seen[label] || (label == "errors.route" && d.tr.seen["errors.file"]) {
			continue
		}
		f := fieldByLabel(label)
		missing := label
		if label == "errors.route" {
			missing = "errors.route or errors.file"
		}
		d.add(f.Code, d.keyOf(f), "", "error pages off", "errors.* fields without "+missing+": the route has no error pages", "set "+d.keyOf(f))
	}
	d.ep.Transform.Errors = nil
}
