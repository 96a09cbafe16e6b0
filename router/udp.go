package router

import (
	"fmt"
	"slices"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// indexUDP returns the UDP routes by listener name, each list in
// precedence order (Route.before). Ghost routes are left out: a UDP route
// that is gone drops its datagrams, as an unrouted listener does.
func indexUDP(routes []*Route) map[string][]*Route {
	var out map[string][]*Route
	for _, r := range routes {
		if r.ghost || r.ep.Protocol != config.ProtocolUDP || r.ep.UDP.Listener == "" {
			continue
		}
		if out == nil {
			out = map[string][]*Route{}
		}
		out[r.ep.UDP.Listener] = append(out[r.ep.UDP.Listener], r)
	}
	for _, list := range out {
		slices.SortFunc(list, func(a, b *Route) int {
			if a.before(b) {
				return -1
			}
			return 1
		})
	}
	return out
}

// MatchUDP returns the UDP route of listener, nil when none names it.
// Several routes naming one listener collide: the first in precedence
// order takes every datagram.
func (s *Snapshot) MatchUDP(listener string) *Route {
	return first(s.udp[listener])
}

// udpListenerDiagnostics checks a UDP entrypoint's listener against the
// declared ones (W095): it must exist and be a UDP listener.
func udpListenerDiagnostics(ep config.Entrypoint, byName map[string]*Listener) []diagnostics.Diagnostic {
	name := ep.UDP.Listener
	l := byName[name]
	var problem string
	switch {
	case l == nil:
		problem = fmt.Sprintf("UDP route %q names listener %q, which levee serve does not declare", ep.ID, name)
	case !l.UDP:
		problem = fmt.Sprintf("UDP route %q names listener %q, which is not a UDP listener", ep.ID, name)
	default:
		return nil
	}
	return []diagnostics.Diagnostic{diagnostics.New(diagnostics.TCPListenerMismatch, sourceOf(ep), "listener", name, "", problem+": not served",
		"declare it with --listen "+name+"=:PORT,udp")}
}
