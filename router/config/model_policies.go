package config

import (
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// A named policy is a set of policy groups declared once under a name
// (levee.policy.<name>.<group>.<field> on any container, or PUT
// /policies/<name>) and referenced by routes in order
// (policies=office-only,compress). It holds only the policy groups of the
// field table (PolicyField): the access policies, the transform policies
// and maxRequestBodyBytes; routing, balancing, health and the breaker stay
// each route's own.
//
// Resolution (ResolveEntrypoint) works group by group: a group the route
// gives itself wins; otherwise the first policy in the route's list that
// has the group gives it whole, never mixed field by field with another's.
// Access control fails closed: the unread keys of every referenced policy
// join the route's, and a reference to an unknown name, or to a name
// declared twice with different access groups, makes the route deny.

// Policy is one named policy as its source declared it.
type Policy struct {
	// Name is the policy's name (NamePattern).
	Name string `json:"name"`
	// Source is the provider that declared it (SourceDocker, SourceAPI...).
	Source string `json:"source"`
	// Origin is the object that declared it, for diagnostics.
	Origin diagnostics.Source `json:"-"`
	// Created orders two declarations of one name: the oldest wins.
	Created time.Time `json:"created"`

	Access              AccessPolicies `json:"access"`
	Transform           Transform      `json:"transform"`
	MaxRequestBodyBytes int64          `json:"max_request_body_bytes,omitempty"`
}

// sameContent reports whether p and q hold the same groups.
func (p Policy) sameContent(q Policy) bool {
	return p.Access.Equal(q.Access) && reflect.DeepEqual(p.Transform, q.Transform) && p.MaxRequestBodyBytes == q.MaxRequestBodyBytes
}

// policyGroupOf is the policy group a field belongs to ("basicAuth",
// "replacePath", "maxRequestBodyBytes"), and whether the field may be in a
// named policy at all. The groups are those of the access and transform
// rows of the field table, and maxRequestBodyBytes, so a policy added
// there can be named without a change here.
func policyGroupOf(f *Field) (string, bool) {
	g, _, _ := strings.Cut(f.Label, ".")
	return g, slices.Contains(policyGroups, g)
}

// policyGroups are the groups a named policy may hold, in table order.
var policyGroups = func() []string {
	out := []string{"maxRequestBodyBytes"}
	for _, f := range slices.Concat(accessPolicyFields(), transformPolicyFields(), errorPagesFields()) {
		if g, _, _ := strings.Cut(f.Label, "."); !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}()

// PolicyField reports whether the field with this label may be given in
// a named policy.
func PolicyField(label string) bool {
	f := fieldByLabel(label)
	if f == nil {
		return false
	}
	_, ok := policyGroupOf(f)
	return ok
}
