package config

import (
	"strings"
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
		fieldCase{field: "udp.maxSessions", get: func(d cfgDecoded) any { return d.ep.UDP.MaxSessions },
			valid: []validCase{{"2", "2", 2}, {"1000000", "1000000", 1_000_000}},
			invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadUDPMaxSessions},
				{label: "1000001", json: "1000001", code: diagnostics.BadUDPMaxSessions}, {label: "many", code: diagnostics.BadUDPMaxSessions}}},
		fieldCase{field: "udp.circuitBreaker.answerTimeout", get: func(d cfgDecoded) any { return d.ep.UDP.AnswerTimeout },
			valid:   []validCase{{"2s", "", 2 * time.Second}, {"1", "1", time.Second}},
			invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadUDPAnswerTimeout}, {label: "soon", code: diagnostics.BadUDPAnswerTimeout}}},
	)
}

// A UDP service's labels name their fields without "udp."; it needs a
// listener, no host, and ignores HTTP and TCP fields.
func TestDecodeUDPLabels(t *testing.T) {
	lc, ds := DecodeUDPLabels(map[string]string{"listener": "dns", "port": "53"}, cfgSrc, func(f string) string { return "levee.udp.dns." + f })
	if len(ds) != 0 || !lc.Routable {
		t.Fatalf("routable %v, diagnostics %v", lc.Routable, ds)
	}
	if ep := lc.Entrypoint; ep.Protocol != ProtocolUDP || ep.UDP != (UDP{Listener: "dns", IdleTimeout: DefaultUDPIdleTimeout, MaxSessions: DefaultUDPMaxSessions}) || ep.CircuitBreaker != nil || lc.Port != 53 {
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

// A UDP route reads the connect-level circuitBreaker.* fields, and
// udp.circuitBreaker.answerTimeout turns the breaker on as they do; the
// HTTP-only breaker fields are W093.
func TestUDPBreakerFields(t *testing.T) {
	key := func(f string) string { return "levee.udp.dns." + f }
	lc, ds := DecodeUDPLabels(map[string]string{"listener": "dns", "circuitBreaker.answerTimeout": "2s"}, cfgSrc, key)
	if len(ds) != 0 || lc.Entrypoint.CircuitBreaker == nil || lc.Entrypoint.UDP.AnswerTimeout != 2*time.Second {
		t.Fatalf("breaker %v answer timeout %v diagnostics %v, want the breaker on waiting 2s", lc.Entrypoint.CircuitBreaker, lc.Entrypoint.UDP.AnswerTimeout, ds)
	}
	lc, ds = DecodeUDPLabels(map[string]string{"listener": "dns", "circuitBreaker.consecutiveFailures": "3", "circuitBreaker.failureStatuses": "500"}, cfgSrc, key)
	cb := lc.Entrypoint.CircuitBreaker
	if cb == nil || cb.Params.ConsecutiveFailures != 3 || lc.Entrypoint.UDP.AnswerTimeout != 0 {
		t.Fatalf("breaker %+v answer timeout %v, want consecutiveFailures 3 and no answer wait", cb, lc.Entrypoint.UDP.AnswerTimeout)
	}
	if len(ds) != 1 || ds[0].Code != diagnostics.TCPFieldIgnored || ds[0].Key != key("circuitBreaker.failureStatuses") {
		t.Errorf("diagnostics %v, want W093 for failureStatuses", ds)
	}
}

// The API payload of a UDP route carries its udp.* fields under
// config.udp and its breaker under config.circuit_breaker, both ways.
func TestUDPPayloadRoundTrip(t *testing.T) {
	body := `{"name": "dns", "protocol": "Udp", "backends": [{"address": "10.0.0.5", "port": 53}],
	 "config": {"udp": {"listener": "dns", "max_sessions": 500, "answer_timeout": "2s"}, "circuit_breaker": {"consecutive_failures": 3}}}`
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), cfgSrc)
	if err != nil || len(ds) != 0 {
		t.Fatalf("decode: %v %v", err, ds)
	}
	if ep.UDP.MaxSessions != 500 || ep.UDP.AnswerTimeout != 2*time.Second || ep.CircuitBreaker == nil || ep.CircuitBreaker.Params.ConsecutiveFailures != 3 {
		t.Fatalf("udp %+v breaker %+v", ep.UDP, ep.CircuitBreaker)
	}
	out, err := EncodeEntrypoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"max_sessions":500`, `"answer_timeout":"2s"`, `"consecutive_failures":3`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("encoded %s, want %s in it", out, want)
		}
	}
	back, ds, err := DecodeEntrypoint(FormatJSON, out, cfgSrc)
	if err != nil || len(ds) != 0 || back.UDP != ep.UDP {
		t.Errorf("decoded again: udp %+v, diagnostics %v, error %v", back.UDP, ds, err)
	}
}
