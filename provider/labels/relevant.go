package labels

import "strings"

// Relevant reports whether Parse can make anything of a container with
// these labels: a route, or a diagnostic. That is a container with a
// <prefix>.* label (routed, or a near miss of <prefix>.enable) or a
// traefik.* label (I003); with ExposedByDefault, every container.
//
// Providers ask before they inspect a container, so that a host full of
// unrelated containers (databases, CI jobs, healthchecks) costs them no
// engine call, no cache entry and no log line. labels may be a superset of
// the container's labels, such as the attributes of an engine event (which
// add name, image, exitCode, …): none of those starts with a prefix and a
// dot.
func (p Parser) Relevant(labels map[string]string) bool {
	if p.ExposedByDefault {
		return true
	}
	prefix := p.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	for k := range labels {
		if hasPrefixFold(k, prefix+".") || strings.HasPrefix(k, traefikPrefix) {
			return true
		}
	}
	return false
}
