package config

import (
	"errors"
	"reflect"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

// FuzzDecodeEntrypoint feeds arbitrary bodies to the API decoder as JSON
// and as YAML. Properties: no panic; a failure is an *InputError with status
// 400 or 422; every diagnostic is in the catalogue; an accepted entrypoint
// has a valid id and hosts, and survives EncodeEntrypoint → DecodeEntrypoint
// unchanged.
func FuzzDecodeEntrypoint(f *testing.F) {
	for _, s := range []string{
		seedPayload,
		`{"name":"app","config":{"hostnames":"a.com","circuit_breaker":{"threshold":"abc","window":"500ms"}}}`,
		`{"name":"x","backends":[{"address":"a","port":"80a","weight":-1},{"prot":1},7],"config":{"hostnames":["http://x","b.com"],"retry":5,"health_check":{"status":[200,"3xx"]}}}`,
		"name: app\nconfig:\n  hostnames: [a.com]\n  circuit_breaker: {cooldown_secs: 10, cooldown: 5s}\n",
		"name: app\nbackends:\n  - {address: 10.0.0.1, port: 8080}\nconfig: {hostnames: a.com, priority: .inf}\n",
		`[]`, `{"name":`, `null`,
		`{"name":"app","config":{"hostnames":["a.com"],"basic_auth":{"users":["admin:$apr1$x"],"realm":"r\"x"},"ip_allow_list":{"source_range":{"a":1,"b":2}},"rate_limit":{"average":-1,"burst":0,"source_criterion":"header:"},"in_flight":{},"forward_auth":{"address":7,"auth_response_headers":["X-A","bad header"]}}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, format := range []Format{FormatJSON, FormatYAML} {
			ep, ds, err := DecodeEntrypoint(format, []byte(body), diagnostics.Source{})
			if err != nil {
				var ie *InputError
				if !errors.As(err, &ie) || (ie.Status != 400 && ie.Status != 422) {
					t.Fatalf("format %d: error %v is not an InputError with 400/422", format, err)
				}
				ds = ie.Diagnostics
			}
			for _, d := range ds {
				if _, ok := diagnostics.Lookup(d.Code); !ok {
					t.Fatalf("code %s not in the catalogue: %v", d.Code, d)
				}
			}
			if err != nil {
				continue
			}
			if !NamePattern.MatchString(ep.ID) || len(ep.Hosts) == 0 {
				t.Fatalf("accepted an invalid entrypoint: %+v", ep)
			}
			enc, err := EncodeEntrypoint(ep)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			again, _, err := DecodeEntrypoint(FormatJSON, enc, diagnostics.Source{})
			if err != nil {
				t.Fatalf("decode of encoded %s: %v", enc, err)
			}
			if !reflect.DeepEqual(ep, again) {
				t.Fatalf("round trip differs:\n got %+v\nwant %+v\njson %s", again, ep, enc)
			}
		}
	})
}
