package config

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/levee-proxy/levee/diagnostics"
)

const migratingDoc = "../../docs/migrating.md"

// foreignSamples are keys an operator would write for an entry: the key
// itself, and for a pattern a key under it as well.
func foreignSamples(fk ForeignKey) []string {
	if base, ok := strings.CutSuffix(fk.Key, ".*"); ok {
		return []string{base, base + ".someOption"}
	}
	if base, ok := strings.CutSuffix(fk.Key, "*"); ok {
		return []string{base + "Scheme"}
	}
	return []string{fk.Key}
}

// snake writes a label key the way a JSON payload would: httpsRedirect →
// https_redirect.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) && i > 0 && s[i-1] != '.' {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// checkForeignHint checks a hint against its entry: who uses the key, what
// Levee calls it (each field as render names it) or that it is not
// supported, the note, and the link to docs/migrating.md.
func checkForeignHint(t *testing.T, where, hint string, fk ForeignKey, render func(*Field) string) {
	t.Helper()
	if !strings.Contains(hint, " is a "+fk.Proxy+" key: ") || !strings.HasSuffix(hint, "(see docs/migrating.md)") {
		t.Errorf("%s: hint %q does not name %s and link %s", where, hint, fk.Proxy, MigratingDoc)
	}
	if len(fk.Fields) == 0 && !strings.Contains(hint, "not supported by Levee") {
		t.Errorf("%s: hint %q does not say it is not supported", where, hint)
	}
	for _, f := range fk.Fields {
		if !strings.Contains(hint, "Levee calls this ") || !strings.Contains(hint, render(fieldByLabel(f))) {
			t.Errorf("%s: hint %q does not name %s", where, hint, render(fieldByLabel(f)))
		}
	}
	if !strings.Contains(hint, fk.Note) {
		t.Errorf("%s: hint %q lacks the note %q", where, hint, fk.Note)
	}
}

// The table's own rules: its fields exist, its keys are distinct, and no
// Levee field, written in any case, is taken for a foreign key (a case
// typo of a Levee key gets the did-you-mean).
func TestForeignTableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, fk := range foreignTable {
		if seen[foldKey(fk.Key)] {
			t.Errorf("key %q twice", fk.Key)
		}
		seen[foldKey(fk.Key)] = true
		if fk.Proxy != proxyTraefik && fk.Proxy != proxySozune && fk.Proxy != proxyBoth {
			t.Errorf("%s: proxy %q", fk.Key, fk.Proxy)
		}
		for _, f := range fk.Fields {
			if fieldByLabel(f) == nil {
				t.Errorf("%s: no Levee field %q", fk.Key, f)
			}
		}
	}
	for _, name := range labelNames {
		for _, n := range []string{name, strings.ToLower(name)} {
			if fk, _, ok := lookupForeign(n); ok {
				t.Errorf("Levee field %q is taken for the foreign key %q", n, fk.Key)
			}
		}
	}
	for _, p := range jsonNames {
		if fk, _, ok := lookupForeign(strings.TrimPrefix(p, "config.")); ok {
			t.Errorf("Levee path %q is taken for the foreign key %q", p, fk.Key)
		}
	}
}

// Every entry through labels: the unknown field gets the table's hint
// instead of a did-you-mean, also behind a Traefik router or service name.
func TestForeignKeysInLabels(t *testing.T) {
	render := func(f *Field) string { return cfgLabelKey(f.Label) }
	for _, fk := range foreignTable {
		for _, sample := range foreignSamples(fk) {
			for _, name := range []string{sample, "web." + sample} {
				_, ds := DecodeLabels(map[string]string{"host": "a.com", name: "x"}, cfgSrc, cfgLabelKey)
				w := cfgWithCode(ds, foreignCode(fk, name))
				if len(w) != 1 || w[0].Key != cfgLabelKey(name) {
					t.Errorf("%s: W013 %v", name, w)
					continue
				}
				checkForeignHint(t, "label "+name, w[0].Hint, fk, render)
				if !strings.HasPrefix(w[0].Hint, sample+" is a ") {
					t.Errorf("label %s: hint %q does not start with the key matched", name, w[0].Hint)
				}
			}
		}
	}
}

// jsonPayload places a foreign key in an API payload where the decoder
// reports it whole: directly under config, or under one of its groups
// (circuit_breaker, health_check, retry). Other nested keys are reported at
// their first segment, which is a different entry or none.
func jsonPayload(key string) (body []byte, path string, ok bool) {
	path = "config." + snake(key)
	first, rest, nested := strings.Cut(snake(key), ".")
	cfg := map[string]any{"hostnames": []string{"a.com"}}
	switch {
	case !nested:
		cfg[first] = "x"
	case jsonGroups["config."+first] != "" && !strings.Contains(rest, "."):
		cfg[first] = map[string]any{rest: "x"}
	default:
		return nil, "", false
	}
	body, _ = json.Marshal(map[string]any{"name": "app", "backends": []any{map[string]any{"address": "a", "port": 80}}, "config": cfg})
	return body, path, true
}

// Every entry that can be written in an API payload, in JSON and YAML
// (YAML is a superset of JSON): the hint names Levee's JSON paths.
func TestForeignKeysInPayloads(t *testing.T) {
	render := func(f *Field) string { return f.JSON }
	tested, writable := 0, 0
	for _, fk := range foreignTable {
		if _, access := accessGroupOfForeign(fk); !access || !strings.Contains(fk.Key, ".") {
			writable++ // keys under an access group are nested deeper than jsonPayload writes
		}
		for _, sample := range foreignSamples(fk) {
			body, path, ok := jsonPayload(sample)
			if !ok {
				continue
			}
			tested++
			for _, format := range []Format{FormatJSON, FormatYAML} {
				_, ds, err := DecodeEntrypoint(format, body, diagnostics.Source{})
				if err != nil {
					t.Fatalf("%s: %v", body, err)
				}
				w := cfgWithCode(ds, foreignCode(fk, strings.TrimPrefix(path, "config.")))
				if len(w) != 1 || w[0].Key != path {
					t.Errorf("%s: W013 %v, want one for %s", body, w, path)
					continue
				}
				checkForeignHint(t, "payload "+path, w[0].Hint, fk, render)
			}
		}
	}
	if tested < writable/2 {
		t.Errorf("only %d samples could be written as a payload", tested)
	}
}

// The hints read as an operator needs them, word for word.
func TestForeignHintText(t *testing.T) {
	cases := []struct{ labelField, labelHint, jsonPath, jsonHint string }{
		{"tls.certresolver", "tls.certresolver is a Traefik key: Levee calls this " + cfgLabelKey("tls") + "; tls=true is enough: the certificate comes from --tls-cert-dir, else ACME (--acme-email), else the default certificate (see docs/migrating.md)",
			"config.tls.certresolver", "tls.certresolver is a Traefik key: Levee calls this config.tls.enabled; tls=true is enough: the certificate comes from --tls-cert-dir, else ACME (--acme-email), else the default certificate (see docs/migrating.md)"},
		{"s.loadbalancer.server.port", "loadbalancer.server.port is a Traefik key: Levee calls this " + cfgLabelKey("port") + " (see docs/migrating.md)", "", ""},
		{"circuitbreaker.fallbackduration", "circuitbreaker.fallbackduration is a Traefik key: Levee calls this " + cfgLabelKey("circuitBreaker.cooldown") + " (see docs/migrating.md)",
			"config.circuit_breaker.fallback_duration", "circuit_breaker.fallback_duration is a Traefik key: Levee calls this config.circuit_breaker.cooldown (see docs/migrating.md)"},
		{"headers.forceSTSHeader", "headers.forceSTSHeader is a Traefik key: Levee calls this " + cfgLabelKey("tls.hsts") + "; Levee sends Strict-Transport-Security on HTTPS answers only, never over plain HTTP (RFC 6797 7.2) (see docs/migrating.md)", "", ""},
		{"headers.stspreload", "headers.stspreload is a Traefik key: Levee calls this " + cfgLabelKey("tls.hsts.preload") + " (see docs/migrating.md)", "", ""},
		{"headers.stsIncludeSubdomains", "headers.stsIncludeSubdomains is a Traefik key: Levee calls this " + cfgLabelKey("tls.hsts.includeSubDomains") + " (see docs/migrating.md)", "", ""},
		{"web.service", "service is a Traefik key: not supported by Levee; a Levee service is the <service> part of the label key and is its own route: there is no router to point at it; write the router's rule and the service's port under one service name (see docs/migrating.md)", "", ""},
		{"stickySession", "stickySession is a Sōzune key: Levee calls this " + cfgLabelKey("sticky.cookie") + " (see docs/migrating.md)",
			"config.sticky_session", "sticky_session is a Sōzune key: Levee calls this config.sticky.enabled (see docs/migrating.md)"},
	}
	for _, c := range cases {
		_, ds := DecodeLabels(map[string]string{"host": "a.com", c.labelField: "x"}, cfgSrc, cfgLabelKey)
		if w := cfgWithCode(ds, diagnostics.UnknownKey); len(w) != 1 || w[0].Hint != c.labelHint {
			t.Errorf("label %s:\n got %v\nwant %q", c.labelField, w, c.labelHint)
		}
		if c.jsonPath == "" {
			continue
		}
		if got := unknownJSONHint(c.jsonPath, jsonNames); got != c.jsonHint {
			t.Errorf("payload %s:\n got %q\nwant %q", c.jsonPath, got, c.jsonHint)
		}
	}
	// A top-level payload key goes through the table too.
	_, ds, err := DecodeEntrypoint(FormatJSON, []byte(`{"name":"app","entrypoints":["web"],"backends":[],"config":{"hostnames":["a.com"]}}`), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if w := cfgWithCode(ds, diagnostics.UnknownKey); len(w) != 1 || !strings.HasPrefix(w[0].Hint, "entrypoints is a Traefik key: Levee calls this config.listeners") {
		t.Errorf("top-level entrypoints: %v", w)
	}
}

// docs/migrating.md carries the table as generated, so the document says
// what the hints say; run with -update to rewrite that part.
func TestMigratingInSync(t *testing.T) {
	doc, err := os.ReadFile(migratingDoc)
	if err != nil {
		t.Fatalf("read %s: %v", migratingDoc, err)
	}
	begin := bytes.Index(doc, []byte("<!-- BEGIN foreign keys"))
	end := bytes.Index(doc, []byte(ForeignKeysEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s has no foreign-key markers", migratingDoc)
	}
	end += len(ForeignKeysEnd)
	want := ForeignKeysMarkdown()
	if *updateDocs {
		doc = append(append(append([]byte(nil), doc[:begin]...), want...), doc[end:]...)
		if err := os.WriteFile(migratingDoc, doc, 0o644); err != nil {
			t.Fatalf("write %s: %v", migratingDoc, err)
		}
		end = begin + len(want)
	}
	if !bytes.Equal(doc[begin:end], want) {
		t.Fatalf("%s is out of date: go test ./router/config -run TestMigratingInSync -update", migratingDoc)
	}
	for _, fk := range foreignTable {
		if !bytes.Contains(doc, []byte("| `"+fk.Key+"` |")) {
			t.Errorf("%s has no row for %s", migratingDoc, fk.Key)
		}
	}
}

// The hand-written Traefik table of docs/migrating.md agrees with the hint
// table: a row whose Traefik label ends in a key of the hint table names one
// of the Levee fields the hint names.
func TestMigratingTraefikRowsAgree(t *testing.T) {
	doc, err := os.ReadFile(migratingDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, traefik, _ := strings.Cut(string(doc), "## From Traefik")
	traefik, _, _ = strings.Cut(traefik, "<!-- BEGIN foreign keys")
	rows := 0
	for _, line := range strings.Split(traefik, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 || !strings.Contains(cells[1], "traefik.") && !strings.Contains(cells[1], "rule=") {
			continue
		}
		label := strings.ToLower(strings.Trim(strings.TrimSpace(cells[1]), "`"))
		for _, fk := range foreignTable {
			if fk.Proxy == proxySozune || len(fk.Fields) == 0 || !strings.Contains(label, "."+foldKey(fk.Key)) {
				continue
			}
			rows++
			named := false
			for _, f := range fk.Fields {
				named = named || strings.Contains(cells[2], f)
			}
			if !named {
				t.Errorf("row %q maps %s to none of %v", strings.TrimSpace(line), fk.Key, fk.Fields)
			}
		}
	}
	if rows == 0 {
		t.Fatal("no Traefik row matched the hint table")
	}
}

// foreignCode is the code of a label field naming an entry: W013, or for an
// entry that configures an access policy (the route denies: the operator
// meant to protect it) E005 when the field is under the policy's own
// group and E006 otherwise (ipwhitelist.*, or behind a router name).
func foreignCode(fk ForeignKey, name string) diagnostics.Code {
	if _, ok := accessGroupOfForeign(fk); !ok {
		return diagnostics.UnknownKey
	}
	seg, _, _ := strings.Cut(name, ".")
	for _, g := range accessLabelGroups {
		if foldKey(g) == foldKey(seg) {
			return diagnostics.UnreadAccessKey
		}
	}
	return diagnostics.MisspelledAccessPolicy
}
