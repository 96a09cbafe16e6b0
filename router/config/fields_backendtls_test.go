package config

import (
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

func init() {
	for _, f := range []string{"tls.serverName", "tls.ca", "tls.clientCert", "tls.insecureSkipVerify"} {
		fieldCompanions[f] = map[string]string{"scheme": "https"}
	}
	fieldCases = append(fieldCases, backendTLSFieldCases...)
}

func btls(d cfgDecoded) BackendTLS { return d.ep.BackendTLS }

var backendTLSFieldCases = []fieldCase{
	{field: "scheme", get: func(d cfgDecoded) any { return d.ep.Scheme },
		valid: []validCase{{"https", "", SchemeHTTPS}, {"HTTP", "", SchemeHTTP}, {"h2c", "", SchemeH2C}, {"H2", "", SchemeH2}},
		invalid: []invalidCase{{label: "grpc", code: diagnostics.BadScheme},
			{label: "ftp", code: diagnostics.BadScheme}, {label: "1", json: "1", code: diagnostics.BadScheme}}},
	{field: "tls.serverName", get: func(d cfgDecoded) any { return btls(d).ServerName },
		valid: []validCase{{"portainer.internal", "", "portainer.internal"}, {"Portainer.Internal.", "", "portainer.internal"}, {"10.0.0.7", "", "10.0.0.7"}},
		invalid: []invalidCase{{label: "https://x", code: diagnostics.BadBackendTLS, fallback: misconfiguredFallback},
			{label: "*.example.com", code: diagnostics.BadBackendTLS, fallback: misconfiguredFallback},
			{label: "", code: diagnostics.BadBackendTLS, fallback: misconfiguredFallback}}},
	{field: "tls.ca", get: func(d cfgDecoded) any { return btls(d).CA },
		valid:   []validCase{{"/certs/ca.pem", "", "/certs/ca.pem"}},
		invalid: []invalidCase{{label: " ", code: diagnostics.BadBackendTLS, fallback: misconfiguredFallback}}},
	{field: "tls.clientCert", get: func(d cfgDecoded) any { return btls(d).ClientCert },
		valid:   []validCase{{"/certs/levee.pem", "", "/certs/levee.pem"}, {"/c/a.crt,/c/a.key", "", "/c/a.crt,/c/a.key"}},
		invalid: []invalidCase{{label: "", code: diagnostics.BadBackendTLS, fallback: misconfiguredFallback}}},
	{field: "tls.insecureSkipVerify", get: func(d cfgDecoded) any { return btls(d).InsecureSkipVerify },
		valid:   []validCase{{"false", "false", false}},
		invalid: []invalidCase{{label: "maybe", code: diagnostics.BadBackendTLS}}},
}

// A value that cannot be read keeps the route from talking to its
// backends: it never becomes the weaker default.
func TestBackendTLSInvalidFailsClosed(t *testing.T) {
	for _, label := range []string{"tls.ca", "tls.clientCert", "tls.serverName"} {
		d, _ := decodeLabel(t, label, "")
		bt := d.ep.BackendTLS
		if bt.CA != InvalidBackendTLS && bt.ClientCert != InvalidBackendTLS && bt.ServerName != InvalidBackendTLS {
			t.Errorf("%s=\"\": backend TLS %+v, want a field marked %q", label, bt, InvalidBackendTLS)
		}
		// The mark survives the canonical form.
		d.ep.Name = "app"
		b, err := EncodeEntrypoint(d.ep)
		if err != nil {
			t.Fatal(err)
		}
		back, _, err := DecodeEntrypoint(FormatJSON, b, diagnostics.Source{})
		if err != nil {
			t.Fatal(err)
		}
		if back.BackendTLS != bt || back.Scheme != SchemeHTTPS {
			t.Errorf("%s: round trip %+v %q, want %+v https", label, back.BackendTLS, back.Scheme, bt)
		}
	}
}

func TestBackendTLSRules(t *testing.T) {
	cfg, ds := DecodeLabels(map[string]string{"host": "a.example.com", "scheme": "https", "tls.insecureSkipVerify": "true"}, cfgSrc, cfgLabelKey)
	if got := cfgWithCode(ds, diagnostics.InsecureBackendTLS); len(got) != 1 || !cfg.Entrypoint.BackendTLS.InsecureSkipVerify {
		t.Errorf("insecureSkipVerify=true: %v, %+v; want one W006 and the setting kept", ds, cfg.Entrypoint.BackendTLS)
	}
	cfg, ds = DecodeLabels(map[string]string{"host": "a.example.com", "tls.ca": "/ca.pem", "tls.serverName": "x.internal"}, cfgSrc, cfgLabelKey)
	if got := cfgWithCode(ds, diagnostics.BackendTLSIgnored); len(got) != 2 || !cfg.Entrypoint.BackendTLS.IsZero() {
		t.Errorf("tls.ca without scheme=https: %v, %+v; want two W007 and no backend TLS", ds, cfg.Entrypoint.BackendTLS)
	}
	// tls.* holds both sides: the client side does not disturb the backend side.
	cfg, ds = DecodeLabels(map[string]string{"host": "a.example.com", "tls": "true", "tls.hsts": "60", "scheme": "https", "tls.serverName": "x.internal"}, cfgSrc, cfgLabelKey)
	if len(ds) != 0 || !cfg.Entrypoint.TLS.Enabled || cfg.Entrypoint.BackendTLS.ServerName != "x.internal" {
		t.Errorf("both sides: %v, %+v %+v", ds, cfg.Entrypoint.TLS, cfg.Entrypoint.BackendTLS)
	}
}

// scheme=h2 takes the backend side of tls.* as https does; h2c, being
// cleartext, ignores it as http does.
func TestBackendTLSRulesHTTP2(t *testing.T) {
	cfg, ds := DecodeLabels(map[string]string{"host": "a.example.com", "scheme": "h2", "tls.serverName": "grpc.internal", "tls.ca": "/ca.pem"}, cfgSrc, cfgLabelKey)
	if len(ds) != 0 || cfg.Entrypoint.Scheme != SchemeH2 || cfg.Entrypoint.BackendTLS.ServerName != "grpc.internal" || cfg.Entrypoint.BackendTLS.CA != "/ca.pem" {
		t.Errorf("scheme=h2 with tls.*: %v, %q %+v; want no diagnostic and the settings kept", ds, cfg.Entrypoint.Scheme, cfg.Entrypoint.BackendTLS)
	}
	cfg, ds = DecodeLabels(map[string]string{"host": "a.example.com", "scheme": "h2c", "tls.ca": "/ca.pem"}, cfgSrc, cfgLabelKey)
	if got := cfgWithCode(ds, diagnostics.BackendTLSIgnored); len(got) != 1 || cfg.Entrypoint.Scheme != SchemeH2C || !cfg.Entrypoint.BackendTLS.IsZero() {
		t.Errorf("scheme=h2c with tls.ca: %v, %q %+v; want one W007 and no backend TLS", ds, cfg.Entrypoint.Scheme, cfg.Entrypoint.BackendTLS)
	}
}
