package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

// Label keys are read in any case, as Traefik reads its labels: the keys
// docs/migrating.md prints in Traefik's lower case configure the policies.
func TestLabelKeysInAnyCase(t *testing.T) {
	lc, ds := DecodeLabels(map[string]string{
		"HOST":                                  "a.com",
		"basicauth.users":                       testBcrypt,
		"ratelimit.average":                     "1",
		"IPALLOWLIST.SOURCERANGE":               "10.0.0.0/8",
		"headers.customrequestheaders.X-Tenant": "blue",
	}, cfgSrc, cfgLabelKey)
	if len(ds) != 0 {
		t.Fatalf("diagnostics %v", ds)
	}
	a := lc.Entrypoint.Access
	if a.BasicAuth == nil || !slices.Equal(a.BasicAuth.Users, []string{testBcrypt}) {
		t.Errorf("basic auth %+v", a.BasicAuth)
	}
	if a.RateLimit == nil || a.RateLimit.Average != 1 {
		t.Errorf("rate limit %+v", a.RateLimit)
	}
	if a.IPAllowList == nil || !slices.Equal(a.IPAllowList.SourceRange, []string{"10.0.0.0/8"}) {
		t.Errorf("allow-list %+v", a.IPAllowList)
	}
	if h := lc.Entrypoint.Transform.Headers; h == nil || h.Request["X-Tenant"] != "blue" {
		t.Errorf("headers %+v", lc.Entrypoint.Transform.Headers)
	}
	// One field in two spellings is given twice (W035), the canonical
	// spelling winning.
	_, ds = DecodeLabels(map[string]string{"host": "a.com", "basicAuth.realm": "a", "basicauth.realm": "b"}, cfgSrc, cfgLabelKey)
	if w := cfgWithCode(ds, diagnostics.DuplicateKey); len(w) != 1 || w[0].Key != cfgLabelKey("basicauth.realm") {
		t.Errorf("duplicate: %v", ds)
	}
}

// An unknown key under an access policy is an error that keeps the key as
// written, so that the route denies, in labels and in payloads, and after
// the entrypoint is stored and read back.
func TestUnknownAccessKeyDenies(t *testing.T) {
	for _, group := range accessLabelGroups {
		name := strings.ToLower(group) + ".userz"
		lc, ds := DecodeLabels(map[string]string{"host": "a.com", name: "x"}, cfgSrc, cfgLabelKey)
		e := cfgWithCode(ds, diagnostics.UnreadAccessKey)
		if len(e) != 1 || e[0].Key != cfgLabelKey(name) || e[0].Severity != diagnostics.Error || !lc.Routable {
			t.Errorf("%s: %v (routable %v)", name, ds, lc.Routable)
		}
		if !slices.Equal(lc.Entrypoint.Access.Unread, []string{cfgLabelKey(name)}) {
			t.Errorf("%s: unread %q", name, lc.Entrypoint.Access.Unread)
		}
	}
	for _, format := range []Format{FormatJSON, FormatYAML} {
		body := `{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],"config":{"hostnames":["a.example.com"],"Basic_Auth":{"users":["` + testBcrypt + `"],"userz":"x"}}}`
		ep, ds, err := DecodeEntrypoint(format, []byte(body), diagnostics.Source{})
		if err != nil {
			t.Fatal(err)
		}
		e := cfgWithCode(ds, diagnostics.UnreadAccessKey)
		if len(e) != 1 || e[0].Key != "config.Basic_Auth.userz" || len(ds) != 1 {
			t.Fatalf("format %d: %v", format, ds)
		}
		if ep.Access.BasicAuth == nil || !slices.Equal(ep.Access.BasicAuth.Users, []string{testBcrypt}) {
			t.Errorf("format %d: users of Basic_Auth not read: %+v", format, ep.Access.BasicAuth)
		}
		out, err := EncodeEntrypoint(ep)
		if err != nil {
			t.Fatal(err)
		}
		back, ds2, err := DecodeEntrypoint(FormatJSON, out, diagnostics.Source{})
		if err != nil {
			t.Fatal(err)
		}
		if !back.Access.Equal(ep.Access) || len(cfgWithCode(ds2, diagnostics.UnreadAccessKey)) != 1 {
			t.Fatalf("round trip lost the unread key: %+v %v\n%s", back.Access, ds2, out)
		}
	}
}

// Keys under other groups and unrelated keys stay W013: only what names an
// access policy denies.
func TestUnknownNonAccessKeyIsWarning(t *testing.T) {
	for _, name := range []string{"headers.foo", "totallyUnrelated", "circuitBreaker.treshold", "sticky.cookie.nme"} {
		lc, ds := DecodeLabels(map[string]string{"host": "a.com", name: "x"}, cfgSrc, cfgLabelKey)
		if len(lc.Entrypoint.Access.Unread) != 0 || len(cfgWithCode(ds, diagnostics.UnknownKey)) != 1 {
			t.Errorf("%s: %v, unread %q", name, ds, lc.Entrypoint.Access.Unread)
		}
	}
}

// A diagnostic names the fallback of a bad value as prose: "(using none)",
// "(using 0, no header)", never "(using (required))".
func TestFallbackTextReadsNaturally(t *testing.T) {
	for _, f := range Fields() {
		fb := fallbackText(f.Default)
		if strings.ContainsAny(fb, "()") {
			t.Errorf("%s: default %q renders as (using %s)", f.Label, f.Default, fb)
		}
	}
	for def, want := range map[string]string{"(required)": "", "(none)": "none", "0 (no header)": "0, no header", "5s": "5s"} {
		if got := fallbackText(def); got != want {
			t.Errorf("fallbackText(%q) = %q, want %q", def, got, want)
		}
	}
	_, ds := DecodeLabels(map[string]string{"host": "a.com", "tls": "true", "tls.hsts": "forever", "rateLimit.average": "x"}, cfgSrc, cfgLabelKey)
	for _, d := range ds {
		if s := d.String(); strings.Contains(s, "((") || strings.Contains(s, "))") || strings.Contains(s, "(using (") {
			t.Errorf("%s", s)
		}
	}
}
