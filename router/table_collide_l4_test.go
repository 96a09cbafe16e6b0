package router

import (
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Two TCP routes claiming one plain listener, or one server name on a TLS
// listener, collide: W018 on both sides, the older wins. Routes that
// only share a listener under different server names do not.
func TestTCPRoutesCollide(t *testing.T) {
	t0 := time.Unix(1000, 0)
	_, diags := NewSnapshot([]config.Entrypoint{
		tcpEntrypoint("pg", "postgres", t0),
		tcpEntrypoint("pg-late", "postgres", t0.Add(time.Second)),
		tcpEntrypoint("db", "websecure", t0, "db.example.com"),
		tcpEntrypoint("db-late", "websecure", t0.Add(time.Second), "db.example.com"),
		tcpEntrypoint("other", "websecure", t0, "other.example.com"),
	})
	got := map[string]string{} // route id -> fallback
	for _, d := range diags {
		if d.Code == diagnostics.RouteCollision {
			got[d.Source.Service] = d.Fallback
			if !strings.Contains(d.Value, "listener") {
				t.Errorf("%s: value %q does not name the listener", d.Source.Service, d.Value)
			}
		}
	}
	for id, want := range map[string]string{"pg": "this route wins", "pg-late": `connections go to`, "db": "this route wins", "db-late": "connections go to"} {
		if !strings.HasPrefix(got[id], want) {
			t.Errorf("%s: W018 fallback %q, want %q…", id, got[id], want)
		}
	}
	if _, ok := got["other"]; ok {
		t.Error("other.example.com collides with nothing, but got W018")
	}
}

// Two UDP routes on one listener collide the same way.
func TestUDPRoutesCollide(t *testing.T) {
	t0 := time.Unix(1000, 0)
	_, diags := NewSnapshot([]config.Entrypoint{udpEntrypoint("dns", "dns", t0), udpEntrypoint("dns-late", "dns", t0.Add(time.Second))})
	n := 0
	for _, d := range diags {
		if d.Code == diagnostics.RouteCollision && d.Key == "udp.listener" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d W018 on udp.listener, want 2 (both sides): %v", n, diags)
	}
}
