package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// fieldCompanions are the fields the table tests give beside a field that
// means nothing alone (a CORS setting without origins, half of a regex
// pair), so that a valid value decodes without a diagnostic.
var fieldCompanions = map[string]map[string]string{
	"cors.allowMethods":            {"cors.allowOrigins": "https://a.example.com"},
	"cors.allowHeaders":            {"cors.allowOrigins": "https://a.example.com"},
	"cors.exposeHeaders":           {"cors.allowOrigins": "https://a.example.com"},
	"cors.allowCredentials":        {"cors.allowOrigins": "https://a.example.com"},
	"cors.maxAge":                  {"cors.allowOrigins": "https://a.example.com"},
	"redirectRegex.regex":          {"redirectRegex.replacement": "https://example.com/$1"},
	"redirectRegex.replacement":    {"redirectRegex.regex": "^http://old/(.*)"},
	"redirectRegex.permanent":      {"redirectRegex.regex": "^http://old/(.*)", "redirectRegex.replacement": "https://example.com/$1"},
	"replacePathRegex.regex":       {"replacePathRegex.replacement": "/v2/$1"},
	"replacePathRegex.replacement": {"replacePathRegex.regex": "^/api/(.*)"},
	"sticky.cookie.sameSite":       {"sticky.cookie.secure": "true"},
	"tls.hsts.includeSubDomains":   {"tls.hsts": "31536000"},
	"tls.hsts.preload":             {"tls.hsts": "31536000", "tls.hsts.includeSubDomains": "true"},
}

// jsonCompanions are fieldCompanions as JSON paths and values.
func jsonCompanions(jsonPath string) map[string]any {
	out := map[string]any{}
	for _, f := range fieldTable {
		if f.JSON != jsonPath {
			continue
		}
		for label, v := range fieldCompanions[f.Label] {
			out[fieldByLabel(label).JSON] = json.RawMessage(quoteJSON(v))
		}
	}
	return out
}

func tr(d cfgDecoded) Transform { return d.ep.Transform }

func init() {
	fieldCases = append(fieldCases, transformFieldCases...)
}

var transformFieldCases = []fieldCase{
	{field: "headers.customRequestHeaders", get: func(d cfgDecoded) any { return tr(d).Headers.Request },
		valid: []validCase{
			{"X-Script-Name: app", `{"x-script-name":"app"}`, map[string]string{"X-Script-Name": "app"}},
			{"X-A: 1\nX-B:", `{"X-A":"1","X-B":""}`, map[string]string{"X-A": "1", "X-B": ""}},
		},
		invalid: []invalidCase{
			{label: "no colon", json: `["x"]`, code: diagnostics.BadHeaders},
			{label: "Bad Name: x", json: `{"Bad Name":"x"}`, code: diagnostics.BadHeaders, fallback: "ignored", value: "Bad Name"},
			{label: "Connection: close", json: `{"Connection":"close"}`, code: diagnostics.ReservedHeader, fallback: "ignored", value: "Connection"},
			{label: "host: other", json: `{"host":"other"}`, code: diagnostics.ReservedHeader, fallback: "ignored", value: "host"},
			{label: "Transfer-Encoding: gzip", json: `{"Transfer-Encoding":"gzip"}`, code: diagnostics.ReservedHeader, fallback: "ignored", value: "Transfer-Encoding"},
		}},
	{field: "headers.customResponseHeaders", get: func(d cfgDecoded) any { return tr(d).Headers.Response },
		valid: []validCase{{"Server:", `{"Server":""}`, map[string]string{"Server": ""}}},
		invalid: []invalidCase{
			{label: "Keep-Alive: 5", json: `{"Keep-Alive":"5"}`, code: diagnostics.ReservedHeader, fallback: "ignored", value: "Keep-Alive"},
			{label: "X-A: a\x01b", json: `{"X-A":"a\u0001b"}`, code: diagnostics.BadHeaders, fallback: "ignored", value: "a\x01b"},
		}},
	{field: "headers.addRequestHeaders", get: func(d cfgDecoded) any { return tr(d).Headers.RequestAdd },
		valid: []validCase{{"X-Tag: levee", `{"X-Tag":"levee"}`, map[string]string{"X-Tag": "levee"}}},
		invalid: []invalidCase{
			{label: "TE: trailers", json: `{"TE":"trailers"}`, code: diagnostics.ReservedHeader, fallback: "ignored", value: "TE"},
		}},
	{field: "headers.addResponseHeaders", get: func(d cfgDecoded) any { return tr(d).Headers.ResponseAdd },
		valid: []validCase{{"Link: </a.css>; rel=preload", `{"link":"</a.css>; rel=preload"}`, map[string]string{"Link": "</a.css>; rel=preload"}}},
		invalid: []invalidCase{
			{label: "Content-Length: 5", json: `{"Content-Length":"5"}`, code: diagnostics.ReservedHeader, fallback: "ignored", value: "Content-Length"},
		}},
	{field: "headers.frameDeny", get: func(d cfgDecoded) any { return tr(d).Headers != nil && tr(d).Headers.FrameDeny },
		valid:   []validCase{{"true", "true", true}, {"false", "false", false}},
		invalid: []invalidCase{{label: "maybe", code: diagnostics.BadBool}}},
	{field: "headers.contentTypeNosniff", get: func(d cfgDecoded) any { return tr(d).Headers != nil && tr(d).Headers.ContentTypeNosniff },
		valid:   []validCase{{"yes", "true", true}},
		invalid: []invalidCase{{label: "2", json: "2", code: diagnostics.BadBool}}},
	{field: "headers.referrerPolicy", get: func(d cfgDecoded) any { return tr(d).Headers.ReferrerPolicy },
		valid:   []validCase{{"no-referrer", "", "no-referrer"}, {"No-Referrer, strict-origin", "", "no-referrer, strict-origin"}},
		invalid: []invalidCase{{label: "sometimes", code: diagnostics.BadHeaders}}},
	{field: "headers.permissionsPolicy", get: func(d cfgDecoded) any { return tr(d).Headers.PermissionsPolicy },
		valid:   []validCase{{"camera=()", "", "camera=()"}},
		invalid: []invalidCase{{label: "a\x00b", code: diagnostics.BadHeaders}}},
	{field: "cors.allowOrigins", get: func(d cfgDecoded) any { return tr(d).CORS.AllowOrigins },
		valid: []validCase{
			{"https://a.example.com, http://b.example.com:8080/", `["https://a.example.com","http://b.example.com:8080"]`, []string{"https://a.example.com", "http://b.example.com:8080"}},
			{"*", "", []string{"*"}},
		},
		invalid: []invalidCase{
			{label: "*,app.example.com", json: `["*","app.example.com"]`, code: diagnostics.BadCORS, fallback: "dropped", value: "app.example.com"},
			{label: "*,https://a.com/path", json: `["*","https://a.com/path"]`, code: diagnostics.BadCORS, fallback: "dropped", value: "https://a.com/path"},
			{label: "*,https://A.com", json: `["*","https://A.com"]`, code: diagnostics.BadCORS, fallback: "dropped", value: "https://A.com"},
		}},
	{field: "cors.allowMethods", get: func(d cfgDecoded) any { return tr(d).CORS.AllowMethods },
		valid:   []validCase{{"get,PUT", `["get","PUT"]`, []string{"GET", "PUT"}}},
		invalid: []invalidCase{{label: "GET,FETCH", json: `["GET","FETCH"]`, code: diagnostics.BadCORS, fallback: "dropped", value: "FETCH"}}},
	{field: "cors.allowHeaders", get: func(d cfgDecoded) any { return tr(d).CORS.AllowHeaders },
		valid:   []validCase{{"content-type,X-A", "", []string{"Content-Type", "X-A"}}},
		invalid: []invalidCase{{label: "X-A,bad header", json: `["X-A","bad header"]`, code: diagnostics.BadCORS, fallback: "dropped", value: "bad header"}}},
	{field: "cors.exposeHeaders", get: func(d cfgDecoded) any { return tr(d).CORS.ExposeHeaders },
		valid:   []validCase{{"x-request-id", "", []string{"X-Request-Id"}}},
		invalid: []invalidCase{{label: "a:b", code: diagnostics.BadCORS, fallback: "dropped"}}},
	{field: "cors.allowCredentials", get: func(d cfgDecoded) any { return tr(d).CORS.AllowCredentials },
		valid:   []validCase{{"true", "true", true}},
		invalid: []invalidCase{{label: "sure", code: diagnostics.BadBool}}},
	{field: "cors.maxAge", get: func(d cfgDecoded) any { return tr(d).CORS.MaxAge },
		valid:   []validCase{{"600", "600", 10 * time.Minute}, {"1h", "", time.Hour}},
		invalid: []invalidCase{{label: "-1", json: "-1", code: diagnostics.BadCORS}, {label: "48h", code: diagnostics.BadCORS}}},
	{field: "compress", get: func(d cfgDecoded) any { return tr(d).Compress },
		valid: []validCase{
			{"true", "true", &Compress{Encodings: DefaultEncodings, MinResponseBodyBytes: DefaultMinResponseBodyBytes}},
			{"false", "false", (*Compress)(nil)},
		},
		invalid: []invalidCase{{label: "gzip", code: diagnostics.BadBool}}},
	{field: "compress.encodings", get: func(d cfgDecoded) any { return tr(d).Compress.Encodings },
		valid: []validCase{{"brotli, GZIP", `["br","gzip"]`, []string{"br", "gzip"}}, {"zstd", "", []string{"zstd"}}},
		invalid: []invalidCase{
			{label: "gzip,deflate", json: `["gzip","deflate"]`, code: diagnostics.BadCompress, fallback: "dropped", value: "deflate"},
			{label: "compress", code: diagnostics.BadCompress, fallback: "dropped"},
		}},
	{field: "compress.minResponseBodyBytes", get: func(d cfgDecoded) any { return tr(d).Compress.MinResponseBodyBytes },
		valid:   []validCase{{"0", "0", 0}, {"512", "512", 512}},
		invalid: []invalidCase{{label: "-1", json: "-1", code: diagnostics.BadCompress}, {label: "1000000", json: "1000000", code: diagnostics.BadCompress}}},
	{field: "compress.excludedContentTypes", get: func(d cfgDecoded) any { return tr(d).Compress.ExcludedContentTypes },
		valid:   []validCase{{"Text/Event-Stream; charset=utf-8,application/grpc", "", []string{"text/event-stream", "application/grpc"}}},
		invalid: []invalidCase{{label: "text", code: diagnostics.BadCompress, fallback: "dropped"}}},
	{field: "redirectScheme.scheme", get: func(d cfgDecoded) any { return *tr(d).RedirectScheme },
		valid:   []validCase{{"HTTPS", "", RedirectScheme{Scheme: "https"}}, {"http", "", RedirectScheme{Scheme: "http"}}},
		invalid: []invalidCase{{label: "ftp", code: diagnostics.BadRedirect}}},
	{field: "redirectScheme.port", get: func(d cfgDecoded) any { return *tr(d).RedirectScheme },
		valid:   []validCase{{"8443", "8443", RedirectScheme{Scheme: "https", Port: 8443}}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadRedirect}, {label: "https", code: diagnostics.BadRedirect}}},
	{field: "redirectScheme.permanent", get: func(d cfgDecoded) any { return *tr(d).RedirectScheme },
		valid:   []validCase{{"true", "true", RedirectScheme{Scheme: "https", Permanent: true}}},
		invalid: []invalidCase{{label: "always", code: diagnostics.BadBool}}},
	{field: "redirectRegex.regex", get: func(d cfgDecoded) any { return tr(d).RedirectRegex.Regex },
		valid: []validCase{{`^https?://www\.(.*)`, "", `^https?://www\.(.*)`}},
		invalid: []invalidCase{
			{label: "^http://(.*", code: diagnostics.BadRedirect},
			{label: "(?<x", code: diagnostics.BadRedirect},
		}},
	{field: "redirectRegex.replacement", get: func(d cfgDecoded) any { return tr(d).RedirectRegex.Replacement },
		valid:   []validCase{{"https://new/${1}", "", "https://new/${1}"}},
		invalid: []invalidCase{{label: "", json: `""`, code: diagnostics.BadRedirect}}},
	{field: "redirectRegex.permanent", get: func(d cfgDecoded) any { return tr(d).RedirectRegex.Permanent },
		valid:   []validCase{{"1", "true", true}},
		invalid: []invalidCase{{label: "nope", code: diagnostics.BadBool}}},
	{field: "replacePath", get: func(d cfgDecoded) any { return tr(d).ReplacePath },
		valid: []validCase{{"/index.html", "", "/index.html"}},
		invalid: []invalidCase{
			{label: "index.html", code: diagnostics.BadPathRewrite},
			{label: "/a/../b", code: diagnostics.BadPathRewrite},
			{label: "/a?b", code: diagnostics.BadPathRewrite},
		}},
	{field: "replacePathRegex.regex", get: func(d cfgDecoded) any { return tr(d).ReplacePathRegex.Regex },
		valid:   []validCase{{"^/api/(.*)", "", "^/api/(.*)"}},
		invalid: []invalidCase{{label: "^/api/(.*", code: diagnostics.BadPathRewrite}}},
	{field: "replacePathRegex.replacement", get: func(d cfgDecoded) any { return tr(d).ReplacePathRegex.Replacement },
		valid:   []validCase{{"/v2/$1", "", "/v2/$1"}},
		invalid: []invalidCase{{label: "", json: `""`, code: diagnostics.BadPathRewrite}}},
	{field: "sticky.cookie", get: func(d cfgDecoded) any { return tr(d).Sticky },
		valid:   []validCase{{"true", "true", &Sticky{CookieName: DefaultStickyCookie}}, {"off", "false", (*Sticky)(nil)}},
		invalid: []invalidCase{{label: "sticky", code: diagnostics.BadBool}}},
	{field: "sticky.cookie.name", get: func(d cfgDecoded) any { return tr(d).Sticky.CookieName },
		valid:   []validCase{{"srv", "", "srv"}},
		invalid: []invalidCase{{label: "a b", code: diagnostics.BadSticky}, {label: "a;b", code: diagnostics.BadSticky}}},
	{field: "sticky.cookie.secure", get: func(d cfgDecoded) any { return tr(d).Sticky.Secure },
		valid:   []validCase{{"true", "true", true}},
		invalid: []invalidCase{{label: "secure", code: diagnostics.BadBool}}},
	{field: "sticky.cookie.httpOnly", get: func(d cfgDecoded) any { return tr(d).Sticky.HTTPOnly },
		valid:   []validCase{{"true", "true", true}},
		invalid: []invalidCase{{label: "x", code: diagnostics.BadBool}}},
	{field: "sticky.cookie.sameSite", get: func(d cfgDecoded) any { return tr(d).Sticky.SameSite },
		valid:   []validCase{{"Strict", "", "strict"}, {"none", "", "none"}},
		invalid: []invalidCase{{label: "sometimes", code: diagnostics.BadSticky}}},
}

// The Traefik form of a map field: one label per header, the name in the key.
func TestHeaderMapLabels(t *testing.T) {
	cfg, ds := DecodeLabels(map[string]string{
		"host":                                 "a.com",
		"headers.customRequestHeaders.X-One":   "1",
		"headers.customRequestHeaders.x-two":   "",
		"headers.customResponseHeaders.Server": "",
		"headers.customRequestHeaders.Upgrade": "h2c",
	}, cfgSrc, cfgLabelKey)
	h := cfg.Entrypoint.Transform.Headers
	if h == nil || !reflect.DeepEqual(h.Request, map[string]string{"X-One": "1", "X-Two": ""}) ||
		!reflect.DeepEqual(h.Response, map[string]string{"Server": ""}) {
		t.Fatalf("headers %+v", h)
	}
	w := cfgWithCode(ds, diagnostics.ReservedHeader)
	if len(w) != 1 || w[0].Key != cfgLabelKey("headers.customRequestHeaders.Upgrade") || len(ds) != 1 {
		t.Fatalf("diagnostics %v", ds)
	}
	// A misspelled policy name gets a did-you-mean.
	_, ds = DecodeLabels(map[string]string{"host": "a.com", "header.frameDeny": "true"}, cfgSrc, cfgLabelKey)
	if w := cfgWithCode(ds, diagnostics.UnknownKey); len(w) != 1 || !strings.Contains(w[0].Hint, "headers.frameDeny") {
		t.Fatalf("did-you-mean: %v", ds)
	}
}

func TestTransformCrossFieldRules(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		code   diagnostics.Code
		check  func(ep Entrypoint) bool
	}{
		{"credentials with the wildcard are refused", map[string]string{"cors.allowOrigins": "*", "cors.allowCredentials": "true"},
			diagnostics.BadCORS, func(ep Entrypoint) bool { return !ep.Transform.CORS.AllowCredentials }},
		{"cors without origins is off", map[string]string{"cors.allowMethods": "GET"},
			diagnostics.BadCORS, func(ep Entrypoint) bool { return ep.Transform.CORS == nil }},
		{"a route that does not take OPTIONS gets no preflights", map[string]string{"cors.allowOrigins": "https://a.com", "methods": "GET,POST"},
			diagnostics.BadCORS, func(ep Entrypoint) bool { return ep.Transform.CORS != nil }},
		{"regex without replacement", map[string]string{"redirectRegex.regex": "^(.*)$"},
			diagnostics.BadRedirect, func(ep Entrypoint) bool { return ep.Transform.RedirectRegex == nil }},
		{"replacement without regex", map[string]string{"replacePathRegex.replacement": "/x"},
			diagnostics.BadPathRewrite, func(ep Entrypoint) bool { return ep.Transform.ReplacePathRegex == nil }},
		{"replacePath beats the regex", map[string]string{"replacePath": "/x", "replacePathRegex.regex": "^/(.*)", "replacePathRegex.replacement": "/$1"},
			diagnostics.RewriteConflict, func(ep Entrypoint) bool {
				return ep.Transform.ReplacePathRegex == nil && ep.Transform.ReplacePath == "/x"
			}},
		{"stripPrefix is dropped beside a rewrite", map[string]string{"path": "/api", "stripPrefix": "true", "replacePath": "/x"},
			diagnostics.RewriteConflict, func(ep Entrypoint) bool { return !ep.StripPrefix }},
		{"compress turned off", map[string]string{"compress": "false", "compress.encodings": "gzip"},
			"", func(ep Entrypoint) bool { return ep.Transform.Compress == nil }},
		{"sticky turned on by a field", map[string]string{"sticky.cookie.secure": "true"},
			"", func(ep Entrypoint) bool {
				s := ep.Transform.Sticky
				return s != nil && s.Secure && s.CookieName == DefaultStickyCookie
			}},
		{"sameSite=none needs secure", map[string]string{"sticky.cookie.sameSite": "none"},
			diagnostics.BadSticky, func(ep Entrypoint) bool { return ep.Transform.Sticky.Secure }},
		{"unknown encodings only: the default", map[string]string{"compress.encodings": "deflate"},
			diagnostics.BadCompress, func(ep Entrypoint) bool { return reflect.DeepEqual(ep.Transform.Compress.Encodings, DefaultEncodings) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labels := map[string]string{"host": "a.com"}
			for k, v := range c.labels {
				labels[k] = v
			}
			cfg, ds := DecodeLabels(labels, cfgSrc, cfgLabelKey)
			if c.code == "" && len(ds) != 0 || c.code != "" && (len(ds) != 1 || ds[0].Code != c.code) {
				t.Fatalf("diagnostics %v, want %q", ds, c.code)
			}
			if !c.check(cfg.Entrypoint) {
				t.Fatalf("entrypoint %+v", cfg.Entrypoint.Transform)
			}
		})
	}
}

// Every transform policy survives the payload's round trip.
func TestTransformRoundTrip(t *testing.T) {
	labels := map[string]string{
		"host": "a.com", "path": "/api", "addPrefix": "/v1",
		"headers.customRequestHeaders.X-A": "1", "headers.customResponseHeaders.Server": "",
		"headers.addRequestHeaders.X-Tag": "a", "headers.addResponseHeaders.Link": "</x>",
		"headers.frameDeny": "true", "headers.referrerPolicy": "no-referrer", "headers.permissionsPolicy": "camera=()",
		"cors.allowOrigins": "https://a.com", "cors.allowCredentials": "true", "cors.maxAge": "60", "cors.allowHeaders": "X-B", "cors.exposeHeaders": "X-C",
		"compress.encodings": "gzip,br", "compress.excludedContentTypes": "text/event-stream", "compress.minResponseBodyBytes": "10",
		"redirectScheme.scheme": "https", "redirectScheme.port": "8443", "redirectScheme.permanent": "true",
		"redirectRegex.regex": "^http://old/(.*)", "redirectRegex.replacement": "https://new/$1",
		"replacePathRegex.regex": "^/api/(.*)", "replacePathRegex.replacement": "/$1",
		"sticky.cookie.name": "srv", "sticky.cookie.sameSite": "lax", "sticky.cookie.httpOnly": "true",
	}
	cfg, ds := DecodeLabels(labels, cfgSrc, cfgLabelKey)
	if len(ds) != 0 {
		t.Fatalf("diagnostics %v", ds)
	}
	ep := cfg.Entrypoint
	ep.Name, ep.ID, ep.Source = "app", "app", SourceAPI
	ep.Backends = []Backend{{Address: "10.0.0.1", Port: 80, Weight: 100}}
	body, err := EncodeEntrypoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	back, ds, err := DecodeEntrypoint(FormatJSON, body, diagnostics.Source{})
	if err != nil || len(ds) != 0 {
		t.Fatalf("decode %s: %v %v", body, err, ds)
	}
	if !reflect.DeepEqual(back.Transform, ep.Transform) {
		t.Fatalf("round trip:\n got %+v\nwant %+v\n%s", back.Transform, ep.Transform, body)
	}
}
