package config

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"go.yaml.in/yaml/v3"
)

// roundTripCompanions are the rows whose Example means nothing alone: the
// labels (given their own Examples) that the validator needs beside them
// before it keeps the value (tls.hsts applies only with tls=true, a regex
// needs its replacement, cors.* needs cors.allowOrigins).
var roundTripCompanions = map[string][]string{
	"tls.redirect":                    {"tls"},
	"tls.hsts":                        {"tls"},
	"tls.hsts.includeSubDomains":      {"tls", "tls.hsts"},
	"tls.hsts.preload":                {"tls", "tls.hsts"},
	"tls.serverName":                  {"scheme"},
	"tls.ca":                          {"scheme"},
	"tls.clientCert":                  {"scheme"},
	"tls.insecureSkipVerify":          {"scheme"},
	"errors.status":                   {"errors.route"},
	"errors.route":                    {"errors.status"},
	"errors.file":                     {"errors.status"},
	"errors.query":                    {"errors.status", "errors.route"},
	"errors.timeout":                  {"errors.status", "errors.route"},
	"cors.allowMethods":               {"cors.allowOrigins"},
	"cors.allowHeaders":               {"cors.allowOrigins"},
	"cors.exposeHeaders":              {"cors.allowOrigins"},
	"cors.allowCredentials":           {"cors.allowOrigins"},
	"cors.maxAge":                     {"cors.allowOrigins"},
	"redirectRegex.regex":             {"redirectRegex.replacement"},
	"redirectRegex.replacement":       {"redirectRegex.regex"},
	"redirectRegex.permanent":         {"redirectRegex.regex", "redirectRegex.replacement"},
	"replacePathRegex.regex":          {"replacePathRegex.replacement"},
	"replacePathRegex.replacement":    {"replacePathRegex.regex"},
	"forwardAuth.trustForwardHeader":  {"forwardAuth.address"},
	"forwardAuth.authResponseHeaders": {"forwardAuth.address"},
	"forwardAuth.authRequestHeaders":  {"forwardAuth.address"},
	"forwardAuth.timeout":             {"forwardAuth.address"},
	"rateLimit.period":                {"rateLimit.average"},
	"rateLimit.burst":                 {"rateLimit.average"},
	"rateLimit.sourceCriterion":       {"rateLimit.average"},
	"inFlight.sourceCriterion":        {"inFlight.amount"},
	"tcp.connectTimeout":              {"tcp.listener"},
	"tcp.idleTimeout":                 {"tcp.listener"},
	"tcp.sni":                         {"tcp.listener"},
	"tcp.tls":                         {"tcp.listener", "tcp.sni"},
	"tcp.maxConnections":              {"tcp.listener"},
	"tcp.proxyProtocol":               {"tcp.listener"},
	"udp.idleTimeout":                 {"udp.listener"},
}

// exampleLabels are the labels of a minimal routable service plus the
// Examples of the fields named.
func exampleLabels(t *testing.T, names ...string) map[string]string {
	t.Helper()
	labels := map[string]string{"host": "app.example.com"}
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "tcp.") }) {
		// A TCP route's: the tcp.* rows apply to it only, and it needs a
		// listener rather than a host.
		labels = map[string]string{"tcp.listener": "base"}
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "udp.") }) {
		labels = map[string]string{"udp.listener": "base"}
	}
	for _, name := range names {
		f := fieldByLabel(name)
		if f == nil {
			t.Fatalf("no field %q", name)
		}
		labels[f.Label] = f.Example
	}
	return labels
}

// labelEntrypoint decodes labels as the Docker provider does, with one
// backend on the port and weight they give, and stamps the identity an
// API payload of name "app" decodes to, so that the two compare equal.
func labelEntrypoint(t *testing.T, labels map[string]string) Entrypoint {
	t.Helper()
	decode := DecodeLabels
	if _, ok := labels["tcp.listener"]; ok {
		decode = DecodeTCPLabels
	}
	if _, ok := labels["udp.listener"]; ok {
		decode = DecodeUDPLabels
	}
	lc, ds := decode(labels, cfgSrc, cfgLabelKey)
	if !lc.Routable {
		t.Fatalf("labels %v not routable: %v", labels, ds)
	}
	ep := lc.Entrypoint
	port := lc.Port
	if port == 0 {
		port = DefaultPort
	}
	ep.ID, ep.Name, ep.Source = "app", "app", SourceAPI
	ep.Backends = []Backend{{Address: "10.0.0.5", Port: port, Weight: lc.Weight, Name: "web-1"}}
	return ep
}

// decodePayload decodes an encoded entrypoint and fails on any diagnostic:
// the canonical form is one the validator takes as it is.
func decodePayload(t *testing.T, format Format, body []byte) Entrypoint {
	t.Helper()
	ep, ds, err := DecodeEntrypoint(format, body, diagnostics.Source{})
	if err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	for _, d := range ds {
		if !strings.HasPrefix(string(d.Code), "I") && d.Code != diagnostics.HSTSPreloadUnmet && d.Code != diagnostics.InsecureBackendTLS {
			t.Errorf("decoding the canonical form reports %v:\n%s", d, body)
		}
	}
	return ep
}

// yamlOf is the YAML form of a JSON payload, whole numbers written whole.
func yamlOf(t *testing.T, body []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(yamlNumbers(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// yamlNumbers turns the json.Numbers of v into the int64 or float64 that
// YAML writes as a number.
func yamlNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case []any:
		for i := range x {
			x[i] = yamlNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = yamlNumbers(x[k])
		}
	}
	return v
}

// TestEveryFieldRoundTrips takes every row's Example as a label on a
// minimal service and requires that the entrypoint survives encoding and
// decoding, in JSON and YAML, with the value the label gave.
func TestEveryFieldRoundTrips(t *testing.T) {
	for _, f := range Fields() {
		t.Run(f.Label, func(t *testing.T) {
			row := fieldByLabel(f.Label)
			if row.get == nil {
				t.Fatalf("field %s has no getter: EncodeEntrypoint cannot write it: give its row a get: beside set: (or rw:, both from one accessor)", f.Label)
			}
			companions := roundTripCompanions[f.Label]
			base := labelEntrypoint(t, exampleLabels(t, companions...))
			ep := labelEntrypoint(t, exampleLabels(t, append(companions, f.Label)...))
			if f.Label != "host" && reflect.DeepEqual(ep, base) {
				t.Fatalf("%s=%q changes nothing on a minimal service: name the labels it needs in roundTripCompanions", f.Label, f.Example)
			}
			enc, err := EncodeEntrypoint(ep)
			if err != nil {
				t.Fatal(err)
			}
			if got := decodePayload(t, FormatJSON, enc); !reflect.DeepEqual(got, ep) {
				t.Errorf("JSON round trip differs:\n got %+v\nwant %+v\njson %s", got, ep, enc)
			}
			if got := decodePayload(t, FormatYAML, yamlOf(t, enc)); !reflect.DeepEqual(got, ep) {
				t.Errorf("YAML round trip differs:\n got %+v\nwant %+v\nyaml %s", got, ep, yamlOf(t, enc))
			}
		})
	}
}

// payloadsBeforeFieldEncoder holds payloads that the hand-written encoder
// (before the table's getters encoded) wrote, as state files and API
// clients hold them: for each row of the table as it was then, the row's
// Example on a minimal service, and twelve combinations of many rows with
// a second backend. The file is frozen: it is the old form, never to be
// regenerated.
const payloadsBeforeFieldEncoder = "testdata/payloads-before-field-encoder.json"

// TestPayloadsOfTheHandWrittenEncoderStillDecode reads back every payload
// of the earlier encoder: each decodes without a diagnostic, encodes to a
// payload holding every key it held with the same value, and that payload
// decodes to the same entrypoint.
func TestPayloadsOfTheHandWrittenEncoderStillDecode(t *testing.T) {
	raw, err := os.ReadFile(payloadsBeforeFieldEncoder)
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Field   string          `json:"field"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 100 {
		t.Fatalf("%s holds %d payloads, want one per row of the table it was written from", payloadsBeforeFieldEncoder, len(cases))
	}
	for _, c := range cases {
		t.Run(c.Field, func(t *testing.T) {
			ep := decodePayload(t, FormatJSON, c.Payload)
			enc, err := EncodeEntrypoint(ep)
			if err != nil {
				t.Fatal(err)
			}
			if missing := missingFrom(jsonValue(t, enc), jsonValue(t, c.Payload), ""); len(missing) > 0 {
				t.Errorf("the encoder no longer writes %v as before:\n old %s\n new %s", missing, c.Payload, enc)
			}
			if again := decodePayload(t, FormatJSON, enc); !reflect.DeepEqual(again, ep) {
				t.Errorf("re-encoded payload decodes differently:\n got %+v\nwant %+v", again, ep)
			}
		})
	}
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return v
}

// missingFrom lists the paths of old whose value got does not hold:
// objects may gain keys, every other value must be equal.
func missingFrom(got, old any, path string) []string {
	oldObj, isObj := old.(map[string]any)
	gotObj, gotIsObj := got.(map[string]any)
	if !isObj || !gotIsObj {
		if !reflect.DeepEqual(got, old) {
			return []string{path}
		}
		return nil
	}
	var out []string
	for k, v := range oldObj {
		out = append(out, missingFrom(gotObj[k], v, strings.TrimPrefix(path+"."+k, "."))...)
	}
	return out
}
