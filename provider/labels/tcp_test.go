package labels

import (
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// levee.tcp.<service>.* labels make a TCP entrypoint, beside an HTTP
// service of the same name on the same container, each with its own
// backend port; replicas of the TCP service share one entrypoint.
func TestParseTCPService(t *testing.T) {
	a := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80",
		"levee.tcp.app.listener=postgres", "levee.tcp.app.port=5432", "levee.tcp.app.SNI=db.example.com")
	b := ctr("2", 1, "levee.enable=true", "levee.tcp.app.listener=postgres", "levee.tcp.app.port=5432", "levee.tcp.app.SNI=db.example.com")
	eps, ds := Parser{}.Parse([]Container{a, b})
	if len(ds) != 0 {
		t.Fatalf("diagnostics %v", ds)
	}
	var tcp, http *config.Entrypoint
	for i := range eps {
		switch eps[i].Protocol {
		case config.ProtocolTCP:
			tcp = &eps[i]
		case config.ProtocolHTTP:
			http = &eps[i]
		}
	}
	if tcp == nil || http == nil {
		t.Fatalf("entrypoints %+v", eps)
	}
	if tcp.TCP.Listener != "postgres" || len(tcp.TCP.SNI) != 1 || tcp.TCP.SNI[0] != "db.example.com" {
		t.Errorf("tcp %+v", tcp.TCP)
	}
	if len(tcp.Backends) != 2 || tcp.Backends[0].Port != 5432 || tcp.Backends[1].Port != 5432 {
		t.Errorf("tcp backends %+v", tcp.Backends)
	}
	if len(http.Backends) != 1 || http.Backends[0].Port != 80 {
		t.Errorf("http backends %+v", http.Backends)
	}
	if tcp.ID == http.ID {
		t.Errorf("the TCP and HTTP services share id %q", tcp.ID)
	}
}
