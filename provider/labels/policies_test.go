package labels

import (
	"slices"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/constraint"
)

const policyBcrypt = "admin:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC"

// Policies are read from any container, enabled or not, in any case;
// their labels are no service's, so Parse says nothing about them; a
// container outside the constraint declares nothing.
func TestParsePolicies(t *testing.T) {
	proxy := ctr("p", 0, "levee.policy.Office-Only.basicAuth.users="+policyBcrypt, "levee.policy.office-only.ipallowlist.sourceRange=10.0.0.0/8",
		"levee.policy.compress.compress=true", "levee.policy.bad name.compress=true", "levee.policy.compress.host=x.example.com")
	app := ctr("a", 1, "levee.enable=true", "levee.http.app.host=app.example.com", "levee.http.app.policies=office-only,compress",
		"levee.policy.other.compress=true")
	pols, ds := Parser{}.ParsePolicies([]Container{app, proxy})
	var names []string
	for _, p := range pols {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"compress", "office-only", "other"}) {
		t.Fatalf("policies %v", names)
	}
	office := pols[1]
	if office.Access.BasicAuth == nil || office.Access.IPAllowList == nil || office.Origin.ObjectID != "p" || !office.Created.Equal(proxy.Created) {
		t.Errorf("office-only = %+v", office)
	}
	if got := codes(ds); !slices.Equal(got, []string{string(diagnostics.BadPolicyName) + " levee.policy.bad name.compress", string(diagnostics.NotAPolicyField) + " levee.policy.compress.host"}) {
		t.Errorf("codes %v, want W049 and W048", got)
	}

	eps, ds := Parser{}.Parse([]Container{app, proxy})
	if len(eps) != 1 || !slices.Equal(eps[0].Policies, []string{"office-only", "compress"}) {
		t.Fatalf("entrypoints %+v", eps)
	}
	for _, d := range ds {
		if d.Code != diagnostics.PortDefaulted {
			t.Errorf("Parse reports policy labels: %v", d)
		}
	}

	c, err := constraint.Parse(`Label("levee.test", "run")`)
	if err != nil {
		t.Fatal(err)
	}
	if pols, _ := (Parser{Constraint: c}).ParsePolicies([]Container{app, proxy}); len(pols) != 0 {
		t.Errorf("containers outside the constraint declared %v", pols)
	}
}

// An enabled container that only declares policies (the proxy's own, a
// config container) is not "enabled with no service" (E004).
func TestPolicyOnlyContainerIsNoMistake(t *testing.T) {
	c := ctr("p", 0, "levee.enable=true", "levee.policy.office-only.ipAllowList.sourceRange=10.0.0.0/8")
	eps, ds := Parser{}.Parse([]Container{c})
	if len(eps) != 0 || len(ds) != 0 {
		t.Fatalf("entrypoints %v, diagnostics %v", eps, ds)
	}
	if pols, _ := (Parser{}).ParsePolicies([]Container{c}); len(pols) != 1 {
		t.Fatalf("policies %v", pols)
	}
}
