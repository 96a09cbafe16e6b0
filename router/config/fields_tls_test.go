package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// The cross-field rules of the tls group, through labels and JSON alike.
func TestTLSRules(t *testing.T) {
	cases := []struct {
		name   string
		labels map[string]string
		json   string // the config object without hostnames
		want   TLS
		code   diagnostics.Code // one diagnostic with this code, or none
	}{
		{"redirect defaults to tls", map[string]string{"tls": "true"}, `"tls":{"enabled":true}`, TLS{Enabled: true, Redirect: true}, ""},
		{"tls shorthand in JSON", map[string]string{"tls": "true"}, `"tls":true`, TLS{Enabled: true, Redirect: true}, ""},
		{"redirect off", map[string]string{"tls": "true", "tls.redirect": "false"}, `"tls":{"enabled":true,"redirect":false}`, TLS{Enabled: true}, ""},
		{"hsts without tls", map[string]string{"tls.hsts": "60"}, `"tls":{"hsts":60}`, TLS{}, diagnostics.TLSFieldIgnored},
		{"redirect without tls", map[string]string{"tls.redirect": "true"}, `"tls":{"redirect":true}`, TLS{}, diagnostics.TLSFieldIgnored},
		{"redirect=false without tls says nothing", map[string]string{"tls.redirect": "false"}, `"tls":{"redirect":false}`, TLS{}, ""},
		{"hsts directives", map[string]string{"tls": "true", "tls.hsts": "31536000", "tls.hsts.includeSubDomains": "true", "tls.hsts.preload": "true"},
			`"tls":{"enabled":true,"hsts":31536000,"hsts_include_subdomains":true,"hsts_preload":true}`,
			TLS{Enabled: true, Redirect: true, HSTS: year, HSTSIncludeSubdomains: true, HSTSPreload: true}, ""},
		{"Traefik's case", map[string]string{"TLS": "true", "tls.HSTS": "31536000", "tls.hsts.includesubdomains": "true"},
			`"TLS":{"Enabled":true,"hsts":31536000,"HSTS_Include_Subdomains":true}`,
			TLS{Enabled: true, Redirect: true, HSTS: year, HSTSIncludeSubdomains: true}, ""},
		{"preload without includeSubDomains", map[string]string{"tls": "true", "tls.hsts": "31536000", "tls.hsts.preload": "true"},
			`"tls":{"enabled":true,"hsts":31536000,"hsts_preload":true}`,
			TLS{Enabled: true, Redirect: true, HSTS: year, HSTSPreload: true}, diagnostics.HSTSPreloadUnmet},
		{"preload with a short max-age", map[string]string{"tls": "true", "tls.hsts": "86400", "tls.hsts.includeSubDomains": "true", "tls.hsts.preload": "true"},
			`"tls":{"enabled":true,"hsts":86400,"hsts_include_subdomains":true,"hsts_preload":true}`,
			TLS{Enabled: true, Redirect: true, HSTS: 24 * time.Hour, HSTSIncludeSubdomains: true, HSTSPreload: true}, diagnostics.HSTSPreloadUnmet},
		{"directives without max-age", map[string]string{"tls": "true", "tls.hsts.includeSubDomains": "true"},
			`"tls":{"enabled":true,"hsts_include_subdomains":true}`, TLS{Enabled: true, Redirect: true}, diagnostics.TLSFieldIgnored},
		{"directives without tls", map[string]string{"tls.hsts.preload": "true"}, `"tls":{"hsts_preload":true}`, TLS{}, diagnostics.TLSFieldIgnored},
		{"custom Strict-Transport-Security header", map[string]string{"tls": "true", "tls.hsts": "31536000",
			"headers.customResponseHeaders.Strict-Transport-Security": "max-age=60"},
			`"tls":{"enabled":true,"hsts":31536000},"headers":{"custom_response_headers":{"Strict-Transport-Security":"max-age=60"}}`,
			TLS{Enabled: true, Redirect: true, HSTS: year}, diagnostics.HSTSHeaderOverride},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.labels["host"] = "a.example.com"
			cfg, ds := DecodeLabels(c.labels, cfgSrc, cfgLabelKey)
			if !reflect.DeepEqual(cfg.Entrypoint.TLS, c.want) {
				t.Errorf("labels: %+v, want %+v", cfg.Entrypoint.TLS, c.want)
			}
			checkOneCode(t, "labels", ds, c.code)
			body := `{"name":"app","backends":[{"address":"10.0.0.5","port":80}],"config":{"hostnames":["a.example.com"],` + c.json + `}}`
			ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ep.TLS, c.want) {
				t.Errorf("JSON: %+v, want %+v", ep.TLS, c.want)
			}
			checkOneCode(t, "JSON", ds, c.code)
		})
	}
}

func checkOneCode(t *testing.T, how string, ds []diagnostics.Diagnostic, code diagnostics.Code) {
	t.Helper()
	switch {
	case code == "" && len(ds) != 0:
		t.Errorf("%s: unexpected diagnostics %v", how, ds)
	case code != "" && (len(ds) != 1 || ds[0].Code != code):
		t.Errorf("%s: want one %s, got %v", how, code, ds)
	}
}

const year = 365 * 24 * time.Hour

func TestHSTSHeader(t *testing.T) {
	for _, c := range []struct {
		tls  TLS
		want string
	}{
		{TLS{Enabled: true}, ""},
		{TLS{Enabled: true, HSTS: year}, "max-age=31536000"},
		{TLS{Enabled: true, HSTS: 60 * time.Second, HSTSIncludeSubdomains: true}, "max-age=60; includeSubDomains"},
		{TLS{Enabled: true, HSTS: year, HSTSIncludeSubdomains: true, HSTSPreload: true}, "max-age=31536000; includeSubDomains; preload"},
	} {
		if got := c.tls.HSTSHeader(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.tls, got, c.want)
		}
	}
}

// The TLS fields and listeners survive the canonical encoding.
func TestEncodeTLSRoundTrip(t *testing.T) {
	cfg, ds := DecodeLabels(map[string]string{"host": "a.example.com", "tls": "true", "tls.redirect": "false",
		"tls.hsts": "31536000", "tls.hsts.includeSubDomains": "true", "tls.hsts.preload": "true", "listeners": "websecure,web"}, cfgSrc, cfgLabelKey)
	if len(ds) != 0 {
		t.Fatal(ds)
	}
	ep := cfg.Entrypoint
	ep.Name = "app"
	ep.Backends = []Backend{{Address: "10.0.0.5", Port: 80, Weight: 100}}
	b, err := EncodeEntrypoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	back, ds, err := DecodeEntrypoint(FormatJSON, b, diagnostics.Source{})
	if err != nil || len(ds) != 0 {
		t.Fatalf("%s: %v %v", b, err, ds)
	}
	if !reflect.DeepEqual(back.TLS, ep.TLS) || !reflect.DeepEqual(back.Listeners, ep.Listeners) {
		t.Errorf("round trip %s: %+v %v, want %+v %v", b, back.TLS, back.Listeners, ep.TLS, ep.Listeners)
	}
}
