package router

import (
	"context"
	"testing"

	"github.com/levee-proxy/levee/router/config"
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
	web := &Listener{Name: "web"}
	websecure := &Listener{Name: "websecure", TLS: true}
	admin := &Listener{Name: "admin"}
	other := &Listener{Name: "other", TLS: true}
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
		{nil, "secure.example.com", "secure", false}, // no listener: Match
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

func TestListenerContext(t *testing.T) {
	if ListenerOf(context.Background()) != nil {
		t.Fatal("listener in an empty context")
	}
	l := &Listener{Name: "web"}
	if got := ListenerOf(WithListener(context.Background(), l)); got != l {
		t.Fatalf("got %v", got)
	}
}
