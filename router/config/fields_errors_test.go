package config

import (
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

func init() {
	fieldCompanions["errors.status"] = map[string]string{"errors.route": "pages"}
	fieldCompanions["errors.route"] = map[string]string{"errors.status": "5xx"}
	fieldCompanions["errors.file"] = map[string]string{"errors.status": "5xx"}
	fieldCompanions["errors.query"] = map[string]string{"errors.status": "5xx", "errors.route": "pages"}
	fieldCompanions["errors.timeout"] = map[string]string{"errors.status": "5xx", "errors.route": "pages"}
	fieldCases = append(fieldCases, errorPagesFieldCases...)
}

func errs(d cfgDecoded) ErrorPages {
	if d.ep.Transform.Errors == nil {
		return ErrorPages{}
	}
	return *d.ep.Transform.Errors
}

var errorPagesFieldCases = []fieldCase{
	{field: "errors.status", get: func(d cfgDecoded) any { return errs(d).Status },
		valid: []validCase{{"500-599,404", `"500-599,404"`, "404,500-599"}, {"5xx, 429", `["5xx","429"]`, "429,500-599"}},
		invalid: []invalidCase{
			{label: "302", code: diagnostics.BadErrorStatus},
			{label: "5xx,abc", code: diagnostics.BadErrorStatus},
		}},
	{field: "errors.route", get: func(d cfgDecoded) any { return errs(d).Route },
		valid:   []validCase{{"pages", "", "pages"}, {" pages ", "", "pages"}},
		invalid: []invalidCase{{label: " ", code: diagnostics.ErrorServiceUnknown}}},
	{field: "errors.file", get: func(d cfgDecoded) any { return errs(d).File },
		valid: []validCase{{"/etc/levee/pages/error.html", "", "/etc/levee/pages/error.html"}, {" /srv//pages/../e.html ", "", "/srv/e.html"}},
		invalid: []invalidCase{
			{label: "pages/error.html", code: diagnostics.ErrorFileUnusable},
			{label: "./error.html", code: diagnostics.ErrorFileUnusable},
		}},
	{field: "errors.query", get: func(d cfgDecoded) any { return errs(d).Query },
		valid: []validCase{{"/e/{status}.html", "", "/e/{status}.html"}, {"/oops", "", "/oops"}},
		invalid: []invalidCase{
			{label: "{status}.html", code: diagnostics.BadErrorQuery},
			{label: "/{url}", code: diagnostics.BadErrorQuery},
			{label: "/a b", code: diagnostics.BadErrorQuery},
		}},
	{field: "errors.timeout", get: func(d cfgDecoded) any { return errs(d).Timeout },
		valid:   []validCase{{"2s", "", 2 * time.Second}},
		invalid: []invalidCase{{label: "-1s", code: diagnostics.BadErrorQuery}}},
}

func TestParseErrorStatuses(t *testing.T) {
	cases := []struct {
		in, want string // want "" = an error
	}{
		{"500-599,404", "404,500-599"},
		{"5xx", "500-599"},
		{"4xx,5xx", "400-599"},
		{" 502 , 503-504 ", "502-504"},
		{"404,404", "404"},
		{"", ""},
		{",", ""},
		{"399", ""},
		{"3xx", ""},
		{"200-404", ""},
		{"600", ""},
		{"504-502", ""},
		{"5x", ""},
		{"abc", ""},
	}
	for _, c := range cases {
		set, err := ParseErrorStatuses(c.in)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ParseErrorStatuses(%q) = %s, want an error", c.in, set)
		case c.want != "" && err != nil:
			t.Errorf("ParseErrorStatuses(%q): %v", c.in, err)
		case c.want != "" && set.String() != c.want:
			t.Errorf("ParseErrorStatuses(%q) = %s, want %s", c.in, set, c.want)
		}
	}
}

// Half an error-pages policy replaces nothing, and says which half is
// missing; defaults fill the rest.
func TestErrorPagesNeedStatusAndRoute(t *testing.T) {
	for _, c := range []struct {
		labels map[string]string
		code   diagnostics.Code
	}{
		{map[string]string{"errors.status": "5xx"}, diagnostics.ErrorServiceUnknown},
		{map[string]string{"errors.route": "pages"}, diagnostics.BadErrorStatus},
		{map[string]string{"errors.query": "/x"}, diagnostics.BadErrorStatus},
	} {
		c.labels["host"] = "app.example.com"
		cfg, ds := DecodeLabels(c.labels, cfgSrc, cfgLabelKey)
		if cfg.Entrypoint.Transform.Errors != nil {
			t.Errorf("%v: error pages on: %+v", c.labels, cfg.Entrypoint.Transform.Errors)
		}
		found := false
		for _, d := range ds {
			found = found || (d.Code == c.code && strings.Contains(d.Message, "no error pages"))
		}
		if !found {
			t.Errorf("%v: no %s in %v", c.labels, c.code, ds)
		}
	}
	cfg, ds := DecodeLabels(map[string]string{"host": "app.example.com", "errors.status": "404", "errors.route": "pages"}, cfgSrc, cfgLabelKey)
	want := ErrorPages{Status: "404", Route: "pages", Query: DefaultErrorQuery, Timeout: DefaultErrorTimeout}
	if len(ds) != 0 || cfg.Entrypoint.Transform.Errors == nil || *cfg.Entrypoint.Transform.Errors != want {
		t.Errorf("got %+v %v, want %+v", cfg.Entrypoint.Transform.Errors, ds, want)
	}
}

// errors.file is a source of pages instead of errors.route: with the
// statuses it turns error pages on; with errors.route too, or when it is
// not an absolute path, the route has none, and only the file's W088
// says so.
func TestErrorPagesFile(t *testing.T) {
	cfg, ds := DecodeLabels(map[string]string{"host": "app.example.com", "errors.status": "5xx", "errors.file": "/srv/error.html"}, cfgSrc, cfgLabelKey)
	want := ErrorPages{Status: "500-599", File: "/srv/error.html", Query: DefaultErrorQuery, Timeout: DefaultErrorTimeout}
	if len(ds) != 0 || cfg.Entrypoint.Transform.Errors == nil || *cfg.Entrypoint.Transform.Errors != want {
		t.Fatalf("got %+v %v, want %+v", cfg.Entrypoint.Transform.Errors, ds, want)
	}
	for _, labels := range []map[string]string{
		{"errors.status": "5xx", "errors.file": "/srv/error.html", "errors.route": "pages"},
		{"errors.status": "5xx", "errors.file": "error.html"},
	} {
		labels["host"] = "app.example.com"
		cfg, ds := DecodeLabels(labels, cfgSrc, cfgLabelKey)
		if cfg.Entrypoint.Transform.Errors != nil {
			t.Errorf("%v: error pages on: %+v", labels, cfg.Entrypoint.Transform.Errors)
		}
		if len(ds) != 1 || ds[0].Code != diagnostics.ErrorFileUnusable || ds[0].Key != cfgLabelKey("errors.file") {
			t.Errorf("%v: diagnostics %v, want one W088 on errors.file", labels, ds)
		}
	}
}

// The payload of error pages from a file has no route, and one from a
// route no file: neither is written empty (an empty route would decode
// as W078).
func TestErrorPagesPayloadOmitsTheUnusedSource(t *testing.T) {
	for _, c := range []struct {
		labels      map[string]string
		has, hasNot string
	}{
		{map[string]string{"errors.status": "5xx", "errors.file": "/srv/error.html"}, `"file":"/srv/error.html"`, `"route"`},
		{map[string]string{"errors.status": "5xx", "errors.route": "pages"}, `"route":"pages"`, `"file"`},
	} {
		c.labels["host"] = "app.example.com"
		cfg, ds := DecodeLabels(c.labels, cfgSrc, cfgLabelKey)
		if len(ds) != 0 {
			t.Fatal(ds)
		}
		enc, err := EncodeEntrypoint(cfg.Entrypoint)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(enc), c.has) || strings.Contains(string(enc), c.hasNot) {
			t.Errorf("%v: payload %s, want %s and no %s", c.labels, enc, c.has, c.hasNot)
		}
	}
}
