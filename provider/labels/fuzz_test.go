package labels

import (
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

// FuzzParse feeds arbitrary label sets to the parser. The input is a list of
// containers separated by "---" lines, each a list of key=value lines; the
// first line of a container may be "!health" (unhealthy HEALTHCHECK) or
// "!offline". The seed corpus in testdata/fuzz/FuzzParse runs with plain
// `go test`. Properties: no panic, every diagnostic is in the catalogue with
// the catalogue's severity and a docker source, and the output is
// deterministic.
func FuzzParse(f *testing.F) {
	f.Add("levee.enable=true\nlevee.http.app.host=a.com\nlevee.http.app.circuitBreaker.threshold=abc")
	f.Fuzz(func(t *testing.T, data string) {
		var cs []Container
		offline := false
		for i, block := range strings.Split(data, "\n---\n") {
			c := Container{ID: string(rune('a' + i%26)), Name: "c" + string(rune('a'+i%26)), Labels: map[string]string{},
				Networks: []Network{{Name: "net", IP: "10.0.0.1"}}, ExposedPorts: []int{8080, 9090}}
			for _, line := range strings.Split(block, "\n") {
				switch line {
				case "!health":
					c.HasHealthcheck, c.Health = true, "unhealthy"
					continue
				case "!offline":
					offline = true
					continue
				}
				k, v, _ := strings.Cut(line, "=")
				c.Labels[k] = v
			}
			cs = append(cs, c)
		}
		p := Parser{Offline: offline, OwnNetworks: []string{"net"}}
		eps, ds := p.Parse(cs)
		for _, d := range ds {
			e, ok := diagnostics.Lookup(d.Code)
			if !ok {
				t.Fatalf("diagnostic code %s not in the catalogue: %v", d.Code, d)
			}
			if d.Severity != e.Severity {
				t.Fatalf("severity %v differs from the catalogue's %v: %v", d.Severity, e.Severity, d)
			}
			if d.Source.Provider != "docker" || d.Source.ObjectID == "" || d.Source.ObjectName == "" {
				t.Fatalf("incomplete source: %+v", d)
			}
		}
		ids := map[string]bool{}
		for _, ep := range eps {
			if ids[ep.ID] {
				t.Fatalf("duplicate entrypoint id %q", ep.ID)
			}
			ids[ep.ID] = true
			if len(ep.Hosts) == 0 {
				t.Fatalf("entrypoint %q without hosts", ep.ID)
			}
		}
		eps2, ds2 := p.Parse(cs)
		if len(eps2) != len(eps) || len(ds2) != len(ds) {
			t.Fatalf("not deterministic")
		}
	})
}
