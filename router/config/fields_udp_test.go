package config

import (
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

func init() {
	fieldCases = append(fieldCases,
		fieldCase{field: "udp.listener", get: func(d cfgDecoded) any { return d.ep.UDP.Listener },
			valid: []validCase{{"dns", "", "dns"}, {"game-1", "", "game-1"}}},
		fieldCase{field: "udp.idleTimeout", get: func(d cfgDecoded) any { return d.ep.UDP.IdleTimeout },
			valid:   []validCase{{"2m", "", 2 * time.Minute}, {"5", "5", 5 * time.Second}},
			invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadUDP}, {label: "never", code: diagnostics.BadUDP}}},
	)
}

// A UDP service's labels name their fields without "udp."; it needs a
// listener, no host, and ignores HTTP and TCP fields.
func TestDecodeUDPLabels(t *testing.T) {
	lc, ds := DecodeUDPLabels(map[string]string{"listener": "dns", "port": "53"}, cfgSrc, func(f string) string { return "levee.udp.dns." + f })
	if len(ds) != 0 || !lc.Routable {
		t.Fatalf("routable %v, diagnostics %v", lc.Routable, ds)
	}
	if ep := lc.Entrypoint; ep.Protocol != ProtocolUDP || ep.UDP != (UDP{Listener: "dns", IdleTimeout: DefaultUDPIdleTimeout}) || lc.Port != 53 {
		t.Errorf("got protocol %q udp %+v port %d", ep.Protocol, ep.UDP, lc.Port)
	}
	lc, ds = DecodeUDPLabels(map[string]string{"port": "53", "host": "x.example.com", "tcp.sni": "x"}, cfgSrc, func(f string) string { return "levee.udp.dns." + f })
	if lc.Routable {
		t.Error("a UDP route without a listener is routable")
	}
	codes := map[diagnostics.Code]int{}
	for _, d := range ds {
		codes[d.Code]++
	}
	if codes[diagnostics.UDPNoListener] != 1 || codes[diagnostics.TCPFieldIgnored] != 2 {
		t.Errorf("diagnostics %v, want E009 and W093 for host and sni", ds)
	}
}

// The udp.* fields on an HTTP route are ignored with W093.
func TestUDPFieldsOnHTTPRouteAreIgnored(t *testing.T) {
	lc, ds := DecodeLabels(map[string]string{"host": "a.example.com", "udp.listener": "dns"}, cfgSrc, cfgLabelKey)
	if !lc.Routable || lc.Entrypoint.UDP.Listener != "" || len(ds) != 1 || ds[0].Code != diagnostics.TCPFieldIgnored {
		t.Errorf("routable %v udp %+v diagnostics %v, want the field ignored with W093", lc.Routable, lc.Entrypoint.UDP, ds)
	}
}
