package file

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// A config file declares named policies beside its entrypoints (or
// alone), decoded by the API's decoder; a file that stops parsing keeps
// its last good policies, and one removed takes them with it.
func TestFilePolicies(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("routes.yaml", `entrypoints:
  - name: nas
    config:
      hostnames: [nas.example.com]
      policies: office-only
    backends:
      - {address: 192.168.1.20, port: 5000}
policies:
  - name: office-only
    config:
      ip_allow_list:
        source_range: [10.0.0.0/8]
      retry:
        attempts: 3
  - name: Bad Name
    config: {}
`)
	write("more.json", `{"policies": [{"name": "compress", "config": {"compress": {"enabled": true}}}]}`)
	l := newLoader([]string{dir}, nil, 0, func() time.Time { return time.Unix(100, 0) })
	res := l.scan()
	var names []string
	for _, p := range res.policies {
		names = append(names, p.Name)
		if p.Source != "file" || p.Created.IsZero() {
			t.Errorf("policy %s: source %q, created %v", p.Name, p.Source, p.Created)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"compress", "office-only"}) {
		t.Fatalf("policies %v (%v)", names, res.diags)
	}
	var codes []diagnostics.Code
	for _, d := range res.diags {
		codes = append(codes, d.Code)
	}
	if !slices.Contains(codes, diagnostics.NotAPolicyField) || !slices.Contains(codes, diagnostics.BadPolicyName) {
		t.Errorf("codes %v, want W048 (retry) and W049 (Bad Name)", codes)
	}
	if len(res.entrypoints) != 1 || !slices.Equal(res.entrypoints[0].Policies, []string{"office-only"}) {
		t.Fatalf("entrypoints %+v", res.entrypoints)
	}

	write("routes.yaml", "entrypoints: [\n")
	res = l.scan()
	if len(res.policies) != 2 {
		t.Errorf("a broken file dropped its policies: %+v", res.policies)
	}
	if err := os.Remove(filepath.Join(dir, "more.json")); err != nil {
		t.Fatal(err)
	}
	res = l.scan()
	if len(res.policies) != 1 || res.policies[0].Name != "office-only" {
		t.Errorf("after removing more.json: %+v", res.policies)
	}
}
