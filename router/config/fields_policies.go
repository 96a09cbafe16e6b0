package config

import (
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// namedPolicyFields is the row of a route's references to named policies
// (model_policies.go).
func namedPolicyFields() []Field {
	return []Field{
		{Label: "policies", JSON: "config.policies", Kind: KindList, Default: "(none)", Code: diagnostics.UnknownPolicy,
			Doc:     "Named policies the route uses, in order, comma-separated: each is declared once, as `levee.policy.<name>.<group>.<field>` labels on any container or through `PUT /policies/<name>`. A policy group the route sets itself wins over the policies'; among the policies, the first that has a group gives it whole. A name no source declares makes the route deny every request (E007), as does a name declared twice with different access groups (W039). See [policies.md](policies.md#named-policies).",
			Example: "office-only,compress", set: setPolicies, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.Policies }))},
	}
}

// setPolicies keeps every name as written, valid or not: a name that
// cannot be a policy's is an unknown reference, and the route denies
// until it is fixed (E007, reported where the policies are resolved). Names
// are read in any case, as the label keys that declare them.
func setPolicies(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err != nil {
		d.add(f.Code, key, displayValue(v), "route denies every request", "invalid policies: "+err.Error(), "write policy names, comma-separated")
		d.ep.Policies = []string{"(invalid)"}
		return
	}
	d.ep.Policies = normalizeList(items, func(s string) (string, bool) { return strings.ToLower(strings.TrimSpace(s)), true }, nil)
}
