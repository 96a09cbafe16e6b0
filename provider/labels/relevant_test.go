package labels

import "testing"

func TestRelevant(t *testing.T) {
	tests := []struct {
		name   string
		parser Parser
		labels map[string]string
		want   bool
	}{
		{"no labels", Parser{}, nil, false},
		{"unrelated labels", Parser{}, map[string]string{"com.docker.compose.project": "db", "maintainer": "x"}, false},
		{"enabled", Parser{}, map[string]string{"levee.enable": "true"}, true},
		{"disabled still relevant: it may carry a near miss", Parser{}, map[string]string{"levee.Enable": "true"}, true},
		{"service label only", Parser{}, map[string]string{"levee.http.app.host": "a.example"}, true},
		{"traefik only (I003)", Parser{}, map[string]string{"traefik.enable": "true"}, true},
		{"other prefix", Parser{Prefix: "edge"}, map[string]string{"levee.enable": "true"}, false},
		{"own prefix", Parser{Prefix: "edge"}, map[string]string{"edge.enable": "true"}, true},
		{"prefix without dot is another label", Parser{}, map[string]string{"leveeish": "1"}, false},
		{"prefix in another case", Parser{}, map[string]string{"Levee.enable": "true"}, true},
		{"event attributes", Parser{}, map[string]string{"name": "db", "image": "postgres", "exitCode": "0"}, false},
		{"exposed by default", Parser{ExposedByDefault: true}, nil, true},
	}
	for _, tt := range tests {
		if got := tt.parser.Relevant(tt.labels); got != tt.want {
			t.Errorf("%s: Relevant(%v) = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

// TestIrrelevantContainersParseToNothing pins the promise Relevant makes:
// a container it calls irrelevant would have produced no entrypoint and no
// diagnostic, so skipping it loses nothing.
func TestIrrelevantContainersParseToNothing(t *testing.T) {
	for _, lbls := range []map[string]string{
		nil,
		{"com.docker.compose.service": "db"},
		{"app.levee.enable": "true"},
	} {
		p := Parser{}
		if p.Relevant(lbls) {
			t.Fatalf("Relevant(%v) = true, want false", lbls)
		}
		c := Container{ID: "c1", Name: "x", Labels: lbls, Networks: []Network{{Name: "n", IP: "10.0.0.2"}}}
		eps, diags := p.Parse([]Container{c})
		if len(eps) != 0 || len(diags) != 0 {
			t.Errorf("labels %v: Parse gave %d entrypoints, diagnostics %v; Relevant said there was nothing", lbls, len(eps), diags)
		}
	}
}
