package config

import (
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// The cross-field rules run on a route's groups as its named policies
// resolve them: a finding only the merged route has is reported once,
// on the route's policies key; one the route's own fields have was
// reported when they were decoded, on their key, and is not reported
// again.
func TestCrossRulesAfterPolicies(t *testing.T) {
	t0 := time.Unix(1, 0)
	pols := []Policy{
		policyOf(t, "auth", "c1", t0, map[string]string{"basicAuth.users": testBcrypt}),
		policyOf(t, "cors", "c1", t0, map[string]string{"cors.allowOrigins": "https://a.example"}),
		policyOf(t, "sts", "c1", t0, map[string]string{"headers.customResponseHeaders.Strict-Transport-Security": "max-age=60"}),
	}
	cases := []struct {
		name   string
		route  map[string]string
		code   diagnostics.Code
		policy bool // reported on the policies key, else none from Resolve
		own    bool // reported on the route's own field when decoded
	}{
		{"stale from an auth policy", map[string]string{"policies": "auth", "circuitBreaker.serveStale": "5m"}, diagnostics.StaleNeverKept, true, false},
		{"stale with credentials kept", map[string]string{"policies": "auth", "circuitBreaker.serveStale": "5m", "circuitBreaker.serveStaleForCredentials": "true"}, diagnostics.StaleNeverKept, false, false},
		{"stale with its own auth", map[string]string{"policies": "auth", "circuitBreaker.serveStale": "5m", "basicAuth.users": testBcrypt}, diagnostics.StaleNeverKept, false, true},
		{"cors from a policy, methods without OPTIONS", map[string]string{"policies": "cors", "methods": "GET,POST"}, diagnostics.BadCORS, true, false},
		{"cors from a policy, methods with OPTIONS", map[string]string{"policies": "cors", "methods": "GET,OPTIONS"}, diagnostics.BadCORS, false, false},
		{"its own cors", map[string]string{"policies": "cors", "methods": "GET", "cors.allowOrigins": "https://b.example"}, diagnostics.BadCORS, false, true},
		{"hsts header from a policy", map[string]string{"policies": "sts"}, diagnostics.HSTSHeaderOverride, true, false},
		{"its own hsts header", map[string]string{"policies": "sts", "headers.customResponseHeaders.Strict-Transport-Security": "max-age=1"}, diagnostics.HSTSHeaderOverride, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			labels := map[string]string{"host": "app.example.com"}
			for k, v := range c.route {
				labels[k] = v
			}
			cfg, decoded := DecodeLabels(labels, cfgSrc, func(f string) string { return "levee.http.app." + f })
			ep := cfg.Entrypoint
			ep.ID, ep.Name, ep.Source = "app", "app", SourceDocker
			if got := len(cfgWithCode(decoded, c.code)); got != map[bool]int{false: 0, true: 1}[c.own] {
				t.Fatalf("decoded: %d %s in %v, want own=%t", got, c.code, decoded, c.own)
			}
			_, ds := ResolvePolicies([]Entrypoint{ep}, pols)
			got := cfgWithCode(ds, c.code)
			if !c.policy {
				if len(got) != 0 {
					t.Fatalf("resolved: %v, want no %s", got, c.code)
				}
				return
			}
			if len(got) != 1 || got[0].Key != "policies" || got[0].Value != c.route["policies"] || got[0].Source.ObjectID != "app" ||
				!strings.Contains(got[0].Message, "policies="+c.route["policies"]) {
				t.Fatalf("resolved: %+v, want one %s on the route's policies key", got, c.code)
			}
		})
	}
}
