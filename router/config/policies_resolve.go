package config

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// PolicySet holds the named policies of every source, one per name, as
// routes resolve them. The zero PolicySet has no policy.
type PolicySet struct {
	byName map[string]Policy
}

// NewPolicySet merges the declarations of every source. A name declared
// twice with the same content is one policy. Declared with different
// content, the oldest declaration (Created, then source and object) is
// kept and W039 names the other; when the two differ in an access group,
// the kept policy also holds an unread key, so every route using it
// denies: Levee cannot tell which protection was meant.
func NewPolicySet(pols []Policy) (PolicySet, []diagnostics.Diagnostic) {
	sorted := slices.Clone(pols)
	slices.SortStableFunc(sorted, func(a, b Policy) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), a.Created.Compare(b.Created), strings.Compare(a.Source, b.Source),
			strings.Compare(a.Origin.ObjectName, b.Origin.ObjectName), strings.Compare(a.Origin.ObjectID, b.Origin.ObjectID))
	})
	set := PolicySet{byName: make(map[string]Policy, len(sorted))}
	declared := make(map[string]Policy, len(sorted)) // the oldest declaration, as written
	var diags []diagnostics.Diagnostic
	for _, p := range sorted {
		first, dup := declared[p.Name]
		switch {
		case !dup:
			declared[p.Name], set.byName[p.Name] = p, p
		case first.sameContent(p):
		case !first.Access.Equal(p.Access):
			if kept := set.byName[p.Name]; !slices.Contains(kept.Access.Unread, conflictKey(p.Name)) {
				kept.Access.Unread = append(slices.Clone(kept.Access.Unread), conflictKey(p.Name))
				set.byName[p.Name] = kept
			}
			diags = append(diags, diagnostics.New(diagnostics.PolicyConflict, p.Origin, "policy "+p.Name, "", "routes using it deny every request",
				fmt.Sprintf("policy %q is also declared by %s with different access groups: every route using it denies every request", p.Name, describe(first.Origin)),
				"declare the policy in one place"))
		default:
			diags = append(diags, diagnostics.New(diagnostics.PolicyConflict, p.Origin, "policy "+p.Name, "", "the declaration of "+describe(first.Origin),
				fmt.Sprintf("policy %q is also declared by %s (older) with different content: that one applies, this one is ignored", p.Name, describe(first.Origin)),
				"declare the policy in one place"))
		}
	}
	return set, diags
}

// conflictKey is the unread key that makes a policy declared differently
// twice deny.
func conflictKey(name string) string {
	return "policy " + name + " (declared twice with different access groups)"
}

func describe(s diagnostics.Source) string {
	name := cmp.Or(s.ObjectName, s.ObjectID)
	return s.Provider + " " + name
}

// Len is the number of policies.
func (s PolicySet) Len() int { return len(s.byName) }

// Names are the policies' names, sorted.
func (s PolicySet) Names() []string { return slices.Sorted(maps.Keys(s.byName)) }

// Get returns the policy of a name.
func (s PolicySet) Get(name string) (Policy, bool) {
	p, ok := s.byName[name]
	return p, ok
}

// Resolve returns ep with its named policies applied (ep itself when it
// references none) and the diagnostics of its references. Group by
// group, a group the route sets itself wins; otherwise the first policy
// in ep.Policies that has the group gives it whole. The unread access
// keys of every referenced policy join the route's, and a name no policy
// has is one more (E007, with the closest name): the route denies.
func (s PolicySet) Resolve(ep Entrypoint) (Entrypoint, []diagnostics.Diagnostic) {
	if len(ep.Policies) == 0 {
		return ep, nil
	}
	var diags []diagnostics.Diagnostic
	own := ep
	ep.Access.Unread = slices.Clone(ep.Access.Unread)
	src := diagnostics.Source{Provider: ep.Source, ObjectID: ep.ID, ObjectName: ep.Name, Service: ep.Name}
	for _, name := range ep.Policies {
		p, ok := s.byName[name]
		if !ok {
			hint := diagnostics.DidYouMean(name, s.Names())
			diags = append(diags, diagnostics.New(diagnostics.UnknownPolicy, src, "policies", name, "route denies every request",
				fmt.Sprintf("unknown policy %q: no source declares it, the route denies every request", name), hint))
			ep.Access.Unread = append(ep.Access.Unread, "policies="+name)
			continue
		}
		applyPolicy(&ep, &p)
	}
	slices.Sort(ep.Access.Unread)
	ep.Access.Unread = slices.Compact(ep.Access.Unread)
	diags = append(diags, policyFindings(&own, &ep, src)...)
	return ep, diags
}

// applyPolicy fills the groups ep does not have from p.
func applyPolicy(ep *Entrypoint, p *Policy) {
	a, pa := &ep.Access, &p.Access
	fill(&a.BasicAuth, pa.BasicAuth)
	fill(&a.ForwardAuth, pa.ForwardAuth)
	fill(&a.IPAllowList, pa.IPAllowList)
	fill(&a.RateLimit, pa.RateLimit)
	fill(&a.InFlight, pa.InFlight)
	a.Unread = append(a.Unread, pa.Unread...)
	t, pt := &ep.Transform, &p.Transform
	fill(&t.Headers, pt.Headers)
	fill(&t.CORS, pt.CORS)
	fill(&t.Compress, pt.Compress)
	fill(&t.RedirectScheme, pt.RedirectScheme)
	fill(&t.RedirectRegex, pt.RedirectRegex)
	fill(&t.Sticky, pt.Sticky)
	fill(&t.Errors, pt.Errors)
	// The path rewrites are one group: one rewrite applies
	// (finishRewrites), and stripPrefix does not run after it.
	if t.ReplacePath == "" && t.ReplacePathRegex == nil && !ep.StripPrefix {
		t.ReplacePath = pt.ReplacePath
		fill(&t.ReplacePathRegex, pt.ReplacePathRegex)
	}
	if ep.MaxRequestBodyBytes == 0 {
		ep.MaxRequestBodyBytes = p.MaxRequestBodyBytes
	}
}

// fill sets *dst to a copy of src when the route has no such group.
func fill[T any](dst **T, src *T) {
	if *dst == nil && src != nil {
		c := *src
		*dst = &c
	}
}

// ResolvePolicies is NewPolicySet and Resolve for every entrypoint: the
// entrypoints with their policies applied, and the diagnostics of the
// declarations and of the references.
func ResolvePolicies(eps []Entrypoint, pols []Policy) ([]Entrypoint, []diagnostics.Diagnostic) {
	set, diags := NewPolicySet(pols)
	out := make([]Entrypoint, len(eps))
	for i, ep := range eps {
		var ds []diagnostics.Diagnostic
		out[i], ds = set.Resolve(ep)
		diags = append(diags, ds...)
	}
	return out, diags
}
