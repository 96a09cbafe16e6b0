package router

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Listener is the proxy listener a request came in on, as the matcher
// needs it. cmd/levee puts one in each listener's base context
// (WithListener); the HTTP servers carry it without knowing what it is.
//
// Which routes serve on a listener: a route that names listeners
// (config.Entrypoint.Listeners) serves on those; otherwise a plain route
// serves on every plain listener and a TLS route (tls=true) on every TLS
// listener. On a plain listener a TLS route that does not serve there but
// has tls.redirect, and serves on a TLS listener, is matched as a redirect
// (MatchOn reports it) to that listener (RedirectTarget), so that
// http://host/path answers 308 to https://host/path.
type Listener struct {
	Name string
	TLS  bool
	// PublicPort is, on a TLS listener, the port clients reach it on
	// (behind a published container port or a port-forwarding load
	// balancer it differs from the port Levee binds): redirects to this
	// listener carry it; 0 or 443 leave the port out of the Location.
	PublicPort int
	// TLSListeners are, on a plain listener, the TLS listeners in the
	// order declared: the candidates of its redirects.
	TLSListeners []*Listener
	// TCP marks a plain TCP listener (--listen name=addr,tcp): it serves
	// the TCP routes that name it and no HTTP.
	TCP bool
}

type listenerKey struct{}

// WithListener returns ctx carrying l.
func WithListener(ctx context.Context, l *Listener) context.Context {
	return context.WithValue(ctx, listenerKey{}, l)
}

// ListenerOf returns the listener ctx carries, or nil.
func ListenerOf(ctx context.Context) *Listener {
	l, _ := ctx.Value(listenerKey{}).(*Listener)
	return l
}

// servesOn reports whether the route answers requests on l itself.
func (r *Route) servesOn(l *Listener) bool {
	if len(r.ep.Listeners) > 0 {
		return slices.Contains(r.ep.Listeners, l.Name)
	}
	return r.ep.TLS.Enabled == l.TLS
}

// redirectsOn reports whether the route answers requests on l with a
// redirect to HTTPS.
func (r *Route) redirectsOn(l *Listener) bool {
	return !l.TLS && r.ep.TLS.Enabled && r.ep.TLS.Redirect && r.RedirectTarget(l) != nil
}

// RedirectTarget returns the TLS listener a redirect from plain listener
// l sends the route's requests to: the first declared TLS listener the
// route serves on (one its listeners= names, else any), nil if it serves
// on none. A redirect elsewhere would point at a listener that answers
// 404 for the route.
func (r *Route) RedirectTarget(l *Listener) *Listener {
	for _, t := range l.TLSListeners {
		if r.servesOn(t) {
			return t
		}
	}
	return nil
}

// MatchOn is Match for a request that came in on listener l: only routes
// that serve on l are candidates, and when none matches, a TLS route with
// tls.redirect that would have matched is returned with redirect set. A
// nil l matches as Match does (every route, no redirect).
func (s *Snapshot) MatchOn(l *Listener, method, host, path string) (r *Route, redirect bool) {
	if l == nil {
		return s.Match(method, host, path), false
	}
	if r = s.matchWith(method, host, path, l, (*Route).servesOn); r != nil {
		return r, false
	}
	if l.TLS || !s.redirects {
		return nil, false
	}
	r = s.matchWith(method, host, path, l, func(r *Route, l *Listener) bool { return !r.servesOn(l) && r.redirectsOn(l) })
	return r, r != nil
}

// ListenerDiagnostics checks the routes of s against the listeners levee
// serve declares (see ListenerDiagnostics). Ghost routes are skipped.
func (s *Snapshot) ListenerDiagnostics(listeners []*Listener) []diagnostics.Diagnostic {
	eps := make([]config.Entrypoint, 0, len(s.routes))
	for _, r := range s.routes {
		if !r.ghost {
			eps = append(eps, r.ep)
		}
	}
	return ListenerDiagnostics(eps, listeners)
}

// ListenerDiagnostics checks entrypoints against the listeners levee serve
// declares: an entrypoint naming an undeclared listener is W046, a TLS
// entrypoint while no TLS listener exists W047. `levee validate` runs it
// on the labels it reads when it is told the listeners.
func ListenerDiagnostics(eps []config.Entrypoint, listeners []*Listener) []diagnostics.Diagnostic {
	names := map[string]bool{}
	byName := map[string]*Listener{}
	anyTLS := false
	for _, l := range listeners {
		names[l.Name] = true
		byName[l.Name] = l
		anyTLS = anyTLS || l.TLS
	}
	var out []diagnostics.Diagnostic
	for _, ep := range eps {
		if ep.Protocol == config.ProtocolTCP {
			out = append(out, tcpListenerDiagnostics(ep, byName)...)
			continue
		}
		for _, n := range ep.Listeners {
			if !names[n] {
				out = append(out, diagnostics.New(diagnostics.UnknownListener, sourceOf(ep), "listeners", n, "not served there",
					fmt.Sprintf("route %q names listener %q, which levee serve does not declare", ep.ID, n),
					"declared: "+strings.Join(slices.Sorted(maps.Keys(names)), ", ")))
			}
		}
		if ep.TLS.Enabled && !anyTLS && len(ep.Listeners) == 0 {
			out = append(out, diagnostics.New(diagnostics.NoTLSListener, sourceOf(ep), "tls", "true", "not served over HTTPS",
				fmt.Sprintf("route %q is tls=true but no TLS listener is declared", ep.ID),
				"add --listen websecure=:443,tls to levee serve"))
		}
	}
	sortDiagnostics(out)
	return out
}
