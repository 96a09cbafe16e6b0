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
			Example: "true", set: setTLSEnabled},
		{Label: "tls.redirect", JSON: "config.tls.redirect", Kind: KindBool, Default: "true when tls=true", Code: diagnostics.BadTLS,
			Doc:     "On plain listeners the route does not serve on, answers its requests with 308 Permanent Redirect to `https://` with the same host, path and query (RFC 9110 15.4.9; 308 keeps the method and body), on the public port of the first TLS listener the route serves on (one `listeners` names, else any; `--listen name=addr,tls,public-port=N`). A route that serves on no TLS listener is not redirected. `false` serves nothing on plain listeners.",
			Example: "false", set: setTLSRedirect},
		{Label: "tls.hsts", JSON: "config.tls.hsts", Kind: KindDuration, Default: "0 (no header)", Code: diagnostics.BadTLS,
			Doc:     fmt.Sprintf("Strict-Transport-Security max-age sent on the route's HTTPS responses (RFC 6797), in whole seconds or a duration, at most %d (two years). Never sent over plain HTTP.", int(MaxHSTS/time.Second)),
			Example: "31536000", set: setTLSHSTS},
		{Label: "listeners", JSON: "config.listeners", Kind: KindList, Default: "every plain listener, or every TLS listener with tls=true", Code: diagnostics.BadListeners,
			Doc:     "Names of the listeners (`--listen name=addr[,tls]`) the route serves on, comma-separated; Traefik calls them entry points. A route that names a plain listener serves there even with tls=true (and is not redirected there); with tls=true, a plain listener it does not name redirects to the first TLS listener it names (see tls.redirect).",
			Example: "websecure", set: setListeners},
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
	for _, label := range []string{"tls.redirect", "tls.hsts"} {
		g, given := d.given[label]
		if !given || (label == "tls.redirect" && !t.Redirect) || (label == "tls.hsts" && t.HSTS == 0) {
			continue
		}
		d.add(diagnostics.TLSFieldIgnored, g.key, g.value, "ignored",
			label+" applies only to a route with tls=true: ignored", "add tls=true or remove "+g.key)
	}
	t.Redirect, t.HSTS = false, 0
}
