package router

import (
	"fmt"
	"slices"

	"github.com/levee-proxy/levee/diagnostics"
)

// l4Collisions reports W018 on both sides of every pair of TCP or UDP
// routes that claim the same listener (and, for TCP routes on a TLS
// listener, the same server name): only the first by Route.before ever
// gets a connection or a datagram there, as for HTTP routes that claim
// the same host and path.
func l4Collisions(tcp map[string]*tcpTable, udp map[string][]*Route) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for listener, t := range tcp {
		out = append(out, claimCollisions("tcp.listener", "listener "+listener, t.plain)...)
		out = append(out, claimCollisions("tcp.sni", fmt.Sprintf("listener %s, server name *", listener), t.any)...)
		for name, list := range t.exact {
			out = append(out, claimCollisions("tcp.sni", fmt.Sprintf("listener %s, server name %s", listener, name), list)...)
		}
		for name, list := range t.wildcard {
			out = append(out, claimCollisions("tcp.sni", fmt.Sprintf("listener %s, server name *.%s", listener, name), list)...)
		}
	}
	for listener, list := range udp {
		out = append(out, claimCollisions("udp.listener", "listener "+listener, list)...)
	}
	return out
}

// claimCollisions is W018 for the routes of list, sorted by precedence,
// that all claim where: the first wins, every other gets nothing there.
func claimCollisions(key, where string, list []*Route) []diagnostics.Diagnostic {
	list = slices.DeleteFunc(slices.Clone(list), func(r *Route) bool { return r.ghost })
	if len(list) < 2 {
		return nil
	}
	w := list[0]
	var out []diagnostics.Diagnostic
	for _, l := range list[1:] {
		if l.ep.ID == w.ep.ID {
			continue
		}
		out = append(out,
			diagnostics.New(diagnostics.RouteCollision, sourceOf(w.ep), key, where, "this route wins",
				fmt.Sprintf("%s is also claimed by %s %q; this route wins (%s)", where, l.ep.Source, l.ep.ID, whyWins(w, l)),
				"give the routes different listeners or server names"),
			diagnostics.New(diagnostics.RouteCollision, sourceOf(l.ep), key, where, fmt.Sprintf("connections go to %s %q", w.ep.Source, w.ep.ID),
				fmt.Sprintf("%s is also claimed by %s %q, which wins (%s); this route gets nothing there", where, w.ep.Source, w.ep.ID, whyWins(w, l)),
				"give the routes different listeners or server names"))
	}
	return out
}
