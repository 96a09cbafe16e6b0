package router

import (
	"context"
	"slices"
	"testing"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

func listenerEP(id, host string, tls, redirect bool, listeners ...string) config.Entrypoint {
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source = id, id, config.SourceAPI
	ep.Hosts = []string{host}
	ep.TLS = config.TLS{Enabled: tls, Redirect: redirect}
	ep.Listeners = listeners
	return ep
}

// Which route answers on which listener, and when a plain listener
// redirects.
func TestMatchOnListeners(t *testing.T) {
	s, diags := NewSnapshot([]config.Entrypoint{
		listenerEP("plain", "plain.example.com", false, false),
		listenerEP("secure", "secure.example.com", true, true),
		listenerEP("secure-noredirect", "noredir.example.com", true, false),
		// The usual pair: a plain route and a TLS route for one host do
		// not collide; the plain one wins on plain listeners.
		listenerEP("both-plain", "both.example.com", false, false),
		listenerEP("both-tls", "both.example.com", true, true),
		listenerEP("named", "named.example.com", false, false, "admin"),
		listenerEP("named-tls", "namedtls.example.com", true, true, "websecure", "web"),
	})
	if len(diags) != 0 {
		t.Fatalf("diagnostics %v", diags)
	}
	websecure := &Listener{Name: "websecure", TLS: true}
	other := &Listener{Name: "other", TLS: true}
	web := &Listener{Name: "web", TLSListeners: []*Listener{websecure, other}}
	admin := &Listener{Name: "admin", TLSListeners: []*Listener{websecure, other}}
	cases := []struct {
		l        *Listener
		host     string
		want     string
		redirect bool
	}{
		{web, "plain.example.com", "plain", false},
		{websecure, "plain.example.com", "", false},
		{websecure, "secure.example.com", "secure", false},
		{web, "secure.example.com:8080", "secure", true},
		{web, "noredir.example.com", "", false},
		{websecure, "noredir.example.com", "secure-noredirect", false},
		{web, "both.example.com", "both-plain", false},
		{websecure, "both.example.com", "both-tls", false},
		{web, "named.example.com", "", false},
		{admin, "named.example.com", "named", false},
		{websecure, "namedtls.example.com", "named-tls", false},
		{web, "namedtls.example.com", "named-tls", false}, // named: served, not redirected
		{other, "namedtls.example.com", "", false},
		{admin, "secure.example.com", "secure", true},
		{admin, "namedtls.example.com", "named-tls", true}, // not served on admin: to websecure
		{nil, "secure.example.com", "secure", false},       // no listener: Match
	}
	for _, c := range cases {
		r, redirect := s.MatchOn(c.l, "GET", c.host, "/x")
		got := ""
		if r != nil {
			got = r.ID()
		}
		name := "<nil>"
		if c.l != nil {
			name = c.l.Name
		}
		if got != c.want || redirect != c.redirect {
			t.Errorf("%s %s: got %q redirect %v, want %q %v", name, c.host, got, redirect, c.want, c.redirect)
		}
	}
}

// A plain listener redirects a TLS route to a TLS listener the route
// serves on: the first of its listeners= that is a TLS listener, else the
// first TLS listener; a route that serves on no TLS listener is not
// redirected (there is nowhere to send it).
func TestRedirectTarget(t *testing.T) {
	first := &Listener{Name: "first", TLS: true, PublicPort: 8443}
	second := &Listener{Name: "second", TLS: true, PublicPort: 41443}
	web := &Listener{Name: "web", TLSListeners: []*Listener{first, second}}
	bare := &Listener{Name: "bare"} // no TLS listener declared
	s, diags := NewSnapshot([]config.Entrypoint{
		listenerEP("any", "any.test", true, true),
		listenerEP("own", "own.test", true, true, "second"),
		listenerEP("both", "both.test", true, true, "second", "first"),
		listenerEP("plainonly", "plainonly.test", true, true, "admin"),
	})
	if len(diags) != 0 {
		t.Fatalf("diagnostics %v", diags)
	}
	cases := []struct {
		l    *Listener
		host string
		want *Listener // nil: no redirect
	}{
		{web, "any.test", first},
		{web, "own.test", second},
		{web, "both.test", first}, // declaration order of the listeners
		{web, "plainonly.test", nil},
		{bare, "any.test", nil},
	}
	for _, c := range cases {
		r, redirect := s.MatchOn(c.l, "GET", c.host, "/")
		if redirect != (c.want != nil) {
			t.Errorf("%s on %s: redirect %v, want %v", c.host, c.l.Name, redirect, c.want != nil)
			continue
		}
		if c.want != nil {
			if got := r.RedirectTarget(c.l); got != c.want {
				t.Errorf("%s on %s: redirected to %v, want %s", c.host, c.l.Name, got, c.want.Name)
			}
		}
	}
}

func TestListenerContext(t *testing.T) {
	if ListenerOf(context.Background()) != nil {
		t.Fatal("listener in an empty context")
	}
	l := &Listener{Name: "web"}
	if got := ListenerOf(WithListener(context.Background(), l)); got != l {
		t.Fatalf("got %v", got)
	}
}

func TestListenerDiagnostics(t *testing.T) {
	s, _ := NewSnapshot([]config.Entrypoint{
		listenerEP("ok", "ok.example.com", false, false, "web"),
		listenerEP("typo", "typo.example.com", false, false, "web", "websecur"),
		listenerEP("secure", "secure.example.com", true, true),
	})
	plainOnly := []*Listener{{Name: "web"}}
	var got []string
	for _, d := range s.ListenerDiagnostics(plainOnly) {
		got = append(got, string(d.Code)+" "+d.Source.ObjectID+" "+d.Value)
	}
	if want := []string{"W046 typo websecur", "W047 secure true"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	withTLS := []*Listener{{Name: "web"}, {Name: "websecur", TLS: true}}
	if ds := s.ListenerDiagnostics(withTLS); len(ds) != 0 {
		t.Errorf("all declared: %v", ds)
	}
}

// Turning tls on, or naming listeners, is a route change (the ACME and
// listener watchers follow route events).
func TestTLSChangeIsARouteChange(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	ep := listenerEP("a", "a.example.com", false, false)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
	events, stop := r.Subscribe(16)
	defer stop()
	for _, change := range []func(*config.Entrypoint){
		func(e *config.Entrypoint) { e.TLS = config.TLS{Enabled: true, Redirect: true} },
		func(e *config.Entrypoint) { e.Listeners = []string{"websecure"} },
	} {
		change(&ep)
		r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
		select {
		case ev := <-events:
			if re, ok := ev.Data.(status.RouteEvent); !ok || re.Change != "changed" {
				t.Errorf("event %+v, want a route change", ev)
			}
		default:
			t.Errorf("no event for %+v", ep)
		}
	}
}
