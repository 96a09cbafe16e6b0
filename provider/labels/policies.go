package labels

import (
	"sort"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// policyScope is the label segment of named policies:
// <prefix>.policy.<name>.<group>.<field>=<value>.
const policyScope = "policy"

// isPolicyKey reports whether rest (a label key after "<prefix>.")
// declares a named policy.
func isPolicyKey(rest string) bool { return hasPrefixFold(rest, policyScope+".") }

// ParsePolicies reads the named policies declared on any of the
// containers that satisfy p.Constraint, enabled or not (a policy is often
// declared on the proxy's own container, which routes nothing). A name is
// read in any case; an invalid one is W049 and its labels are ignored.
// Policies come out sorted by name, then by container age; one name on
// two containers is two declarations, which the router merges
// (config.NewPolicySet).
func (p Parser) ParsePolicies(containers []Container) ([]config.Policy, []diagnostics.Diagnostic) {
	prefix := p.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	var out []config.Policy
	var diags []diagnostics.Diagnostic
	for i := range containers {
		c := &containers[i]
		if !p.Constraint.Match(c.Labels) {
			continue
		}
		ps, ds := p.containerPolicies(prefix, c)
		out, diags = append(out, ps...), append(diags, ds...)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Created.Before(out[j].Created)
	})
	diagnostics.Sort(diags)
	return out, diags
}

func (p Parser) containerPolicies(prefix string, c *Container) ([]config.Policy, []diagnostics.Diagnostic) {
	fields := map[string]map[string]string{}  // policy name → field → value
	written := map[string]map[string]string{} // policy name → field → key as written
	var diags []diagnostics.Diagnostic
	bad := map[string]bool{}
	for k, v := range c.Labels {
		if !hasPrefixFold(k, prefix+".") || !isPolicyKey(k[len(prefix)+1:]) {
			continue
		}
		rest := k[len(prefix)+1+len(policyScope)+1:]
		rawName, field, ok := strings.Cut(rest, ".")
		name := strings.ToLower(rawName)
		if err := config.CheckPolicyName(name); err != nil || !ok || field == "" {
			if !bad[rawName] {
				bad[rawName] = true
				msg := "invalid policy label: want " + prefix + ".policy.<name>.<group>.<field>"
				if err != nil {
					msg = err.Error() + ": its labels are ignored"
				}
				diags = append(diags, diagnostics.New(diagnostics.BadPolicyName, p.source(c, ""), k, v, "ignored", msg, ""))
			}
			continue
		}
		if fields[name] == nil {
			fields[name], written[name] = map[string]string{}, map[string]string{}
		}
		fields[name][field], written[name][field] = v, k
	}
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]config.Policy, 0, len(names))
	for _, name := range names {
		keyOf := func(field string) string {
			if k, ok := written[name][field]; ok {
				return k
			}
			return prefix + "." + policyScope + "." + name + "." + field
		}
		src := diagnostics.Source{Provider: p.sourceName(), ObjectID: c.ID, ObjectName: c.Name, Service: policyScope + " " + name}
		pol, ds := config.DecodePolicyLabels(name, fields[name], src, keyOf)
		pol.Source, pol.Created = p.sourceName(), c.Created
		out, diags = append(out, pol), append(diags, ds...)
	}
	return out, diags
}
