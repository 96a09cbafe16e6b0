package router

import (
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

func udpEntrypoint(id, listener string, created time.Time) config.Entrypoint {
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source, ep.Created = id, id, config.SourceAPI, created
	ep.Protocol = config.ProtocolUDP
	ep.UDP = config.UDP{Listener: listener, IdleTimeout: config.DefaultUDPIdleTimeout}
	ep.Backends = []config.Backend{{Address: "10.0.0.1", Port: 53, Weight: 1}}
	return ep
}

// A UDP route is matched by its listener alone; the oldest wins a tie;
// TCP and HTTP matching never return one.
func TestMatchUDP(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s, _ := NewSnapshot([]config.Entrypoint{udpEntrypoint("dns-late", "dns", t0.Add(time.Second)), udpEntrypoint("dns", "dns", t0)})
	if r := s.MatchUDP("dns"); r == nil || r.ID() != "dns" {
		t.Errorf("MatchUDP(dns) = %v, want the oldest route dns", r)
	}
	if r := s.MatchUDP("other"); r != nil {
		t.Errorf("MatchUDP(other) = %s, want none", r.ID())
	}
	if r := s.MatchTCP("dns", ""); r != nil {
		t.Errorf("MatchTCP(dns) = %s, want no UDP route", r.ID())
	}
}

// A UDP route's listener must be declared and be a UDP listener (W095).
func TestUDPListenerDiagnostics(t *testing.T) {
	ls := []*Listener{{Name: "dns", UDP: true}, {Name: "pg", TCP: true}}
	eps := []config.Entrypoint{udpEntrypoint("ok", "dns", time.Time{}), udpEntrypoint("tcp", "pg", time.Time{}), udpEntrypoint("gone", "nowhere", time.Time{})}
	ds := ListenerDiagnostics(eps, ls)
	if len(ds) != 2 {
		t.Fatalf("diagnostics %v, want two (pg is TCP, nowhere undeclared)", ds)
	}
	for _, d := range ds {
		if d.Code != diagnostics.TCPListenerMismatch {
			t.Errorf("code %s, want W095", d.Code)
		}
	}
}
