package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// An access policy fails closed on what Levee cannot read: an unknown key
// under one of the access groups (basicAuth.userz) or a group name that is
// an access policy misspelled (basicAuh.users) or another proxy's name of
// one (ipWhiteList.sourceRange) is an error diagnostic, the key is kept in
// AccessPolicies.Unread and the route denies every request. The groups are
// derived from the access rows of the field table, so a policy added there
// fails closed without a change here.

// unreadJSONKey is the payload key that keeps Unread across a store and a
// read back (EncodeEntrypoint writes it, DecodeEntrypoint reads it).
const unreadJSONKey = "config.unread_access_keys"

// accessLabelGroups are the label groups of the access policies
// ("basicAuth"), accessGroups their payload groups ("config.basic_auth")
// with the code of a bad value.
var (
	accessLabelGroups = groupsOf(accessPolicyFields(), func(f Field) string { return f.Label })
	accessGroups      = func() map[string]diagnostics.Code {
		m := map[string]diagnostics.Code{}
		for _, f := range accessPolicyFields() {
			if i := strings.LastIndexByte(f.JSON, '.'); i > 0 {
				m[f.JSON[:i]] = f.Code
			}
		}
		return m
	}()
	// labelGroups are every group of the label keys, for telling a
	// misspelled access policy from a misspelled other group.
	labelGroups = groupsOf(fieldTable, func(f Field) string { return f.Label })
)

// groupsOf returns the distinct first segments of the dotted names of
// fields, in table order.
func groupsOf(fields []Field, name func(Field) string) []string {
	var out []string
	for _, f := range fields {
		g, _, ok := strings.Cut(name(f), ".")
		if ok && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// accessGroupFor says which access policy an unknown name was meant for:
// the group its first segment names (in any case, and ignoring '_' and
// '-', so basic_auth is basicAuth), the access group it is closest to
// among all groups (a typo), or the access policy another proxy's key
// stands for (foreign.go). exact is true for the first case.
func accessGroupFor(name string, groups, access []string) (group string, exact, ok bool) {
	seg, _, _ := strings.Cut(name, ".")
	folded := foldKey(seg)
	for _, g := range access {
		if foldKey(g) == folded {
			return g, true, true
		}
	}
	foldedGroups := make([]string, len(groups))
	for i, g := range groups {
		foldedGroups[i] = foldKey(g)
	}
	if slices.Contains(foldedGroups, folded) {
		// A key under another group (headers.x) is that group's.
		return "", false, false
	}
	if c, close := diagnostics.Closest(folded, foldedGroups); close {
		for _, g := range access {
			if foldKey(g) == c {
				return g, false, true
			}
		}
	}
	if fk, _, found := lookupForeign(name); found {
		if g, ok := accessGroupOfForeign(fk); ok {
			return g, false, true
		}
	}
	return "", false, false
}

// accessGroupOfForeign is the access policy a foreign key configures: the
// group it is under (Traefik's basicauth.headerfield) or of the Levee
// field it stands for (ipwhitelist.* is ipAllowList's).
func accessGroupOfForeign(fk ForeignKey) (string, bool) {
	seg, _, _ := strings.Cut(fk.Key, ".")
	for _, g := range accessLabelGroups {
		if foldKey(g) == foldKey(seg) {
			return g, true
		}
	}
	for _, label := range fk.Fields {
		if g, _, _ := strings.Cut(label, "."); slices.Contains(accessLabelGroups, g) {
			return g, true
		}
	}
	return "", false
}

// unreadAccess reports an unknown key meant for an access policy (E005 for
// a key under the policy, E006 for a misspelled policy name) and keeps it
// in Unread so that the route denies. It returns false, reporting
// nothing, when the key has nothing to do with an access policy.
func (d *draft) unreadAccess(name, key, value, hint string, groups, access []string) bool {
	group, exact, ok := accessGroupFor(name, groups, access)
	if !ok {
		return false
	}
	if exact {
		d.add(diagnostics.UnreadAccessKey, key, value, "route denies every request",
			fmt.Sprintf("unknown field %q of access policy %s: the route denies every request", name, group), hint)
	} else {
		d.add(diagnostics.MisspelledAccessPolicy, key, value, "route denies every request",
			fmt.Sprintf("%q is not a Levee field but names an access policy (%s): the route denies every request", name, group), hint)
	}
	d.ep.Access.Unread = append(d.ep.Access.Unread, key)
	return true
}

// setUnread reads back the keys a stored entrypoint could not read: the
// route keeps denying until they are fixed at their source.
func (d *draft) setUnread(key string, v any) {
	items, err := toList(v)
	if err != nil || len(items) == 0 {
		items = []string{displayValue(v)}
	}
	for _, it := range items {
		d.add(diagnostics.UnreadAccessKey, key, it, "route denies every request",
			fmt.Sprintf("the entrypoint names access policy key %q that Levee could not read: the route denies every request", it), "")
	}
	d.ep.Access.Unread = append(d.ep.Access.Unread, items...)
}

// finishUnread puts the unread keys in a stable order, so that the same
// input gives the same entrypoint.
func (d *draft) finishUnread() {
	slices.Sort(d.ep.Access.Unread)
	d.ep.Access.Unread = slices.Compact(d.ep.Access.Unread)
}
