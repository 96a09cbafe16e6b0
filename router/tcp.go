package router

import (
	"fmt"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// tcpTable indexes the TCP routes of one listener: those without SNI (a
// plain TCP listener's), and those with SNI by server name, exact names
// apart from wildcards ("*.example.com" under "example.com") and the "*"
// catch-all. Each list is in precedence order (Route.before).
type tcpTable struct {
	plain    []*Route
	exact    map[string][]*Route
	wildcard map[string][]*Route
	any      []*Route
}

// indexTCP builds the TCP tables of routes, by listener name. Ghost
// routes are left out: a TCP route that is gone refuses connections at
// once, which is what an unrouted connection gets.
func indexTCP(routes []*Route) map[string]*tcpTable {
	var out map[string]*tcpTable
	for _, r := range routes {
		if r.ghost || r.ep.Protocol != config.ProtocolTCP || r.ep.TCP.Listener == "" {
			continue
		}
		if out == nil {
			out = map[string]*tcpTable{}
		}
		t := out[r.ep.TCP.Listener]
		if t == nil {
			t = &tcpTable{exact: map[string][]*Route{}, wildcard: map[string][]*Route{}}
			out[r.ep.TCP.Listener] = t
		}
		if len(r.ep.TCP.SNI) == 0 {
			t.plain = append(t.plain, r)
		}
		for _, name := range r.ep.TCP.SNI {
			switch {
			case name == "*":
				t.any = append(t.any, r)
			case strings.HasPrefix(name, "*."):
				t.wildcard[name[2:]] = append(t.wildcard[name[2:]], r)
			default:
				t.exact[name] = append(t.exact[name], r)
			}
		}
	}
	before := func(a, b *Route) int {
		if a.before(b) {
			return -1
		}
		return 1
	}
	for _, t := range out {
		slices.SortFunc(t.plain, before)
		slices.SortFunc(t.any, before)
		for _, m := range []map[string][]*Route{t.exact, t.wildcard} {
			for _, list := range m {
				slices.SortFunc(list, before)
			}
		}
	}
	return out
}

// MatchTCP returns the TCP route of a connection on listener, nil when no
// route takes it. Without a server name (sni "") it is the listener's
// route without SNI (a plain TCP listener's); with one, the route whose
// SNI names it: an exact name beats a wildcard, a wildcard the "*"
// catch-all. Server names are compared in lower case (RFC 6066 3: the
// name is a DNS host name, which compares without regard to case).
func (s *Snapshot) MatchTCP(listener, sni string) *Route {
	t := s.tcp[listener]
	if t == nil {
		return nil
	}
	if sni == "" {
		return first(t.plain)
	}
	sni = strings.TrimSuffix(strings.ToLower(sni), ".")
	if r := first(t.exact[sni]); r != nil {
		return r
	}
	if _, parent, ok := strings.Cut(sni, "."); ok {
		if r := first(t.wildcard[parent]); r != nil {
			return r
		}
	}
	return first(t.any)
}

// HasSNIRoutes reports whether some TCP route takes connections by SNI on
// the listener: only then must its connections' ClientHello be read
// before TLS is handed to the HTTP server.
func (s *Snapshot) HasSNIRoutes(listener string) bool {
	t := s.tcp[listener]
	return t != nil && (len(t.exact) > 0 || len(t.wildcard) > 0 || len(t.any) > 0)
}

func first(rs []*Route) *Route {
	if len(rs) == 0 {
		return nil
	}
	return rs[0]
}

// tcpListenerDiagnostics checks a TCP entrypoint's listener against the
// declared ones (W095): it must exist; a route with SNI needs a TLS
// listener, one without a TCP listener.
func tcpListenerDiagnostics(ep config.Entrypoint, byName map[string]*Listener) []diagnostics.Diagnostic {
	name := ep.TCP.Listener
	l := byName[name]
	var problem, hint string
	switch {
	case l == nil:
		problem, hint = fmt.Sprintf("TCP route %q names listener %q, which levee serve does not declare", ep.ID, name), "declare it with --listen "+name+"=:PORT,tcp"
	case len(ep.TCP.SNI) > 0 && !l.TLS:
		problem, hint = fmt.Sprintf("TCP route %q routes by SNI on listener %q, which is not a TLS listener", ep.ID, name), "name a listener declared with ,tls, or remove sni"
	case len(ep.TCP.SNI) == 0 && !l.TCP:
		problem, hint = fmt.Sprintf("TCP route %q has no sni and listener %q is not a TCP listener", ep.ID, name), "declare a listener with --listen "+name+"=:PORT,tcp, or give sni on a TLS listener"
	default:
		return nil
	}
	return []diagnostics.Diagnostic{diagnostics.New(diagnostics.TCPListenerMismatch, sourceOf(ep), "listener", name, "", problem+": not served", hint)}
}
