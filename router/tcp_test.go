package router

import (
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

func tcpEntrypoint(id, listener string, created time.Time, sni ...string) config.Entrypoint {
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source, ep.Created = id, id, config.SourceAPI, created
	ep.Protocol = config.ProtocolTCP
	ep.TCP = config.TCP{Listener: listener, SNI: sni}
	ep.Backends = []config.Backend{{Address: "10.0.0.1", Port: 5432, Weight: 1}}
	return ep
}

// TCP routes are matched by listener, and by SNI on a TLS listener: exact
// beats wildcard beats "*"; the oldest route wins a tie; no HTTP match
// ever returns one.
func TestMatchTCP(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s, _ := NewSnapshot([]config.Entrypoint{
		tcpEntrypoint("pg", "postgres", t0),
		tcpEntrypoint("pg-late", "postgres", t0.Add(time.Second)),
		tcpEntrypoint("db", "websecure", t0, "db.example.com"),
		tcpEntrypoint("wild", "websecure", t0, "*.example.com"),
		tcpEntrypoint("all", "websecure", t0, "*"),
	})
	cases := []struct{ listener, sni, want string }{
		{"postgres", "", "pg"},
		{"websecure", "DB.example.com", "db"},
		{"websecure", "x.example.com", "wild"},
		{"websecure", "other.org", "all"},
		{"websecure", "", ""},
		{"nowhere", "", ""},
	}
	for _, c := range cases {
		got := ""
		if r := s.MatchTCP(c.listener, c.sni); r != nil {
			got = r.ID()
		}
		if got != c.want {
			t.Errorf("MatchTCP(%q, %q) = %q, want %q", c.listener, c.sni, got, c.want)
		}
	}
	if !s.HasSNIRoutes("websecure") || s.HasSNIRoutes("postgres") {
		t.Errorf("HasSNIRoutes: websecure %v postgres %v", s.HasSNIRoutes("websecure"), s.HasSNIRoutes("postgres"))
	}
	if r, _ := s.MatchOn(&Listener{Name: "web"}, "GET", "db.example.com", "/"); r != nil {
		t.Errorf("an HTTP request matched TCP route %s", r.ID())
	}
}

// A TCP route on an undeclared listener, or on one of the wrong kind, is
// W095.
func TestTCPListenerDiagnostics(t *testing.T) {
	ls := []*Listener{{Name: "postgres", TCP: true}, {Name: "websecure", TLS: true}, {Name: "web"}}
	eps := []config.Entrypoint{
		tcpEntrypoint("ok", "postgres", time.Time{}),
		tcpEntrypoint("ok-sni", "websecure", time.Time{}, "db.example.com"),
		tcpEntrypoint("undeclared", "mqtt", time.Time{}),
		tcpEntrypoint("sni-plain", "postgres", time.Time{}, "db.example.com"),
		tcpEntrypoint("http-listener", "web", time.Time{}),
	}
	got := map[string]bool{}
	for _, d := range ListenerDiagnostics(eps, ls) {
		if d.Code == diagnostics.TCPListenerMismatch {
			got[d.Source.ObjectID] = true
		}
	}
	for _, id := range []string{"undeclared", "sni-plain", "http-listener"} {
		if !got[id] {
			t.Errorf("no W095 for %s (got %v)", id, got)
		}
	}
	if got["ok"] || got["ok-sni"] {
		t.Errorf("W095 for a valid route: %v", got)
	}
}
