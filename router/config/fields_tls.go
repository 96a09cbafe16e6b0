package config

import (
	"fmt"
	"regexp"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// listenerNameRe is the form of a listener name, as `levee serve --listen
// name=addr` accepts it.
var listenerNameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// ValidListenerName reports whether s can name a listener.
func ValidListenerName(s string) bool { return listenerNameRe.MatchString(s) }

// tlsFields are the tls.* rows (HTTPS, redirect, HSTS) and the listeners a
// route serves on.
func tlsFields() []Field {
	return []Field{
		{Label: "tls", JSON: "config.tls.enabled", JSONAliases: []string{"config.tls"}, Kind: KindBool, Default: "false", Code: diagnostics.BadTLS,
			Doc:     "Serves the route over HTTPS on the TLS listeners (`--listen name=addr,tls`) instead of the plain ones. The certificate is a static one from --tls-cert-dir that names the host, else one ACME obtains for each host (with --acme-email), else the default certificate. JSON also accepts `\"tls\": true`.",
			Example: "true", set: setTLSEnabled, get: inTLS(func(ep *Entrypoint) any { return ep.TLS.Enabled })},
		{Label: "tls.redirect", JSON: "config.tls.redirect", Kind: KindBool, Default: "true when tls=true", Code: diagnostics.BadTLS,
			Doc:     "On plain listeners the route does not serve on, answers its requests with 308 Permanent Redirect to `https://` with the same host, path and query (RFC 9110 15.4.9; 308 keeps the method and body), on the public port of the first TLS listener the route serves on (one `listeners` names, else any; `--listen name=addr,tls,public-port=N`). A route that serves on no TLS listener is not redirected. `false` serves nothing on plain listeners.",
			Example: "false", set: setTLSRedirect, get: inTLS(func(ep *Entrypoint) any { return ep.TLS.Redirect })},
		{Label: "tls.hsts", JSON: "config.tls.hsts", Kind: KindDuration, Default: "0 (no header)", Code: diagnostics.BadTLS,
			Doc:     fmt.Sprintf("Strict-Transport-Security max-age sent on the route's HTTPS responses (RFC 6797), in whole seconds or a duration, at most %d (two years). Never sent over plain HTTP.", int(MaxHSTS/time.Second)),
			Example: "31536000", set: setTLSHSTS, get: inTLS(func(ep *Entrypoint) any { return int64(ep.TLS.HSTS / time.Second) })},
		{Label: "tls.hsts.includeSubDomains", JSON: "config.tls.hsts_include_subdomains", Kind: KindBool, Default: "false", Code: diagnostics.BadTLS,
			Doc:     "Adds `includeSubDomains` to the Strict-Transport-Security header: browsers then reach every sub-domain of the host over HTTPS only (Traefik's `stsIncludeSubdomains`).",
			Example: "true", rw: tlsBool(func(t *TLS) *bool { return &t.HSTSIncludeSubdomains })},
		{Label: "tls.hsts.preload", JSON: "config.tls.hsts_preload", Kind: KindBool, Default: "false", Code: diagnostics.BadTLS,
			Doc:     "Adds `preload` to the Strict-Transport-Security header, asking to be put in the browsers' preload list (Traefik's `stsPreload`). The list also wants `includeSubDomains` and a max-age of at least a year (W085 says when one is missing).",
			Example: "true", rw: tlsBool(func(t *TLS) *bool { return &t.HSTSPreload })},
		{Label: "listeners", JSON: "config.listeners", Kind: KindList, Default: "every plain listener, or every TLS listener with tls=true", Code: diagnostics.BadListeners,
			Doc:     "Names of the listeners (`--listen name=addr[,tls]`) the route serves on, comma-separated; Traefik calls them entry points. A route that names a plain listener serves there even with tls=true (and is not redirected there); with tls=true, a plain listener it does not name redirects to the first TLS listener it names (see tls.redirect).",
			Example: "websecure", set: setListeners, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.Listeners }))},
	}
}

func setTLSEnabled(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.ep.TLS.Enabled = b
	}
}

func setTLSRedirect(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.ep.TLS.Redirect = b
	}
}

func setTLSHSTS(d *draft, f *Field, key string, v any) {
	t, ok := decode(d, f, key, v, toDuration, func(t time.Duration) error {
		switch {
		case t < 0 || t > MaxHSTS:
			return fmt.Errorf("must be between 0 and %d seconds", int(MaxHSTS/time.Second))
		case t%time.Second != 0:
			return fmt.Errorf("max-age is whole seconds")
		}
		return nil
	})
	if ok {
		d.ep.TLS.HSTS = t
	}
}

func setTLSBool(ptr func(*TLS) *bool) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		if b, ok := decode(d, f, key, v, toBool, nil); ok {
			*ptr(&d.ep.TLS) = b
		}
	}
}

// tlsBool reads and writes one HSTS directive, written only when set.
func tlsBool(ptr func(*TLS) *bool) readWrite {
	return readWrite{setTLSBool(ptr), omitEmpty(inTLS(func(ep *Entrypoint) any { return *ptr(&ep.TLS) }))}
}

func setListeners(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.Listeners = normalizeList(items, func(s string) (string, bool) {
		return s, ValidListenerName(s)
	}, func(s string) {
		d.add(f.Code, key, s, "", fmt.Sprintf("invalid listener name %q dropped: want lower-case letters, digits, '-' and '_'", s), "")
	})
}

// tlsRules applies the cross-field rules of the tls group: redirect
// defaults to tls, and redirect or HSTS without tls mean nothing (W042).
func (d *draft) tlsRules() {
	t := &d.ep.TLS
	if t.Enabled {
		if _, given := d.given["tls.redirect"]; !given {
			t.Redirect = true
		}
		return
	}
	for _, label := range []string{"tls.redirect", "tls.hsts", "tls.hsts.includeSubDomains", "tls.hsts.preload"} {
		g, given := d.given[label]
		if !given || (label == "tls.redirect" && !t.Redirect) || (label == "tls.hsts" && t.HSTS == 0) ||
			(label == "tls.hsts.includeSubDomains" && !t.HSTSIncludeSubdomains) || (label == "tls.hsts.preload" && !t.HSTSPreload) {
			continue
		}
		d.add(diagnostics.TLSFieldIgnored, g.key, g.value, "ignored",
			label+" applies only to a route with tls=true: ignored", "add tls=true or remove "+g.key)
	}
	*t = TLS{Enabled: t.Enabled}
}

// hstsRules checks the HSTS directives against the max-age they qualify
// (RFC 6797 6.1) and the preload list's requirements (hstspreload.org),
// and reports a Strict-Transport-Security header set by the headers
// policy, which replaces tls.hsts's and is sent over plain HTTP too.
func (d *draft) hstsRules() {
	t := &d.ep.TLS
	if t.HSTS == 0 {
		for _, label := range []string{"tls.hsts.includeSubDomains", "tls.hsts.preload"} {
			if g, given := d.given[label]; given && t.Enabled && (t.HSTSIncludeSubdomains || t.HSTSPreload) {
				d.add(diagnostics.TLSFieldIgnored, g.key, g.value, "ignored",
					label+" qualifies the Strict-Transport-Security header, which tls.hsts=0 does not send: ignored", "set tls.hsts to a max-age")
			}
		}
		t.HSTSIncludeSubdomains, t.HSTSPreload = false, false
	}
	if t.HSTSPreload && (!t.HSTSIncludeSubdomains || t.HSTS < MinHSTSPreload) {
		g := d.givenOr("tls.hsts.preload", "true")
		d.add(diagnostics.HSTSPreloadUnmet, g.key, g.value, "sent as written",
			fmt.Sprintf("tls.hsts.preload: the preload list wants includeSubDomains and a max-age of at least %d seconds (here: includeSubDomains %t, max-age %d): it will refuse the host",
				int64(MinHSTSPreload/time.Second), t.HSTSIncludeSubdomains, int64(t.HSTS/time.Second)),
			"set tls.hsts.includeSubDomains=true and tls.hsts to 31536000 or more")
	}
	d.addFindings(hstsHeaderFindings(&d.ep))
}

// inTLS is the payload's tls group, which holds both sides: the route's
// HTTPS (TLS) and its backends' (BackendTLS, fields_backendtls.go).
var inTLS = group(func(ep *Entrypoint) *Entrypoint {
	if ep.TLS.IsZero() && ep.BackendTLS.IsZero() {
		return nil
	}
	return ep
})
