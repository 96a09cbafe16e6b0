package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

func init() {
	fieldCases = append(fieldCases, tcpFieldCases...)
	fieldCompanions["tcp.tls"] = map[string]string{"tcp.sni": "db.example.com"} // tls means something with sni only
}

var tcpFieldCases = []fieldCase{
	{field: "tcp.listener", get: func(d cfgDecoded) any { return d.ep.TCP.Listener },
		// A bad listener leaves the route unrouted (E008 beside W092):
		// TestTCPFieldsApplyToTheirProtocolOnly.
		valid: []validCase{{"postgres", "", "postgres"}, {"db-1", "", "db-1"}}},
	{field: "tcp.sni", get: func(d cfgDecoded) any { return d.ep.TCP.SNI },
		valid:   []validCase{{"db.example.com", `["db.example.com"]`, []string{"db.example.com"}}, {"DB.example.com,*.x.org", `["DB.example.com","*.x.org"]`, []string{"db.example.com", "*.x.org"}}},
		invalid: []invalidCase{{label: "http://x/", json: `["http://x/"]`, value: "http://x/", code: diagnostics.BadTCP, fallback: "-"}}},
	{field: "tcp.tls", get: func(d cfgDecoded) any { return d.ep.TCP.TLS },
		valid: []validCase{{"passthrough", "", TCPPassthrough}, {"PassThrough", "", TCPPassthrough}, {"terminate", "", TCPTerminate}},
		invalid: []invalidCase{
			{label: "offload", code: diagnostics.TCPTLSUnsupported},
			{label: "yes", code: diagnostics.TCPTLSUnsupported},
		}},
	{field: "tcp.connectTimeout", get: func(d cfgDecoded) any { return d.ep.TCP.ConnectTimeout },
		valid:   []validCase{{"2s", "", 2 * time.Second}, {"3", "3", 3 * time.Second}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadTCP}, {label: "soon", code: diagnostics.BadTCP}}},
	{field: "tcp.idleTimeout", get: func(d cfgDecoded) any { return d.ep.TCP.IdleTimeout },
		valid:   []validCase{{"1h", "", time.Hour}},
		invalid: []invalidCase{{label: "-1s", code: diagnostics.BadTCP}, {label: "forever", code: diagnostics.BadTCP}}},
	{field: "tcp.maxConnections", get: func(d cfgDecoded) any { return d.ep.TCP.MaxConnections },
		valid:   []validCase{{"100", "100", 100}, {"0", "0", 0}},
		invalid: []invalidCase{{label: "-1", json: "-1", code: diagnostics.BadTCP}, {label: "many", code: diagnostics.BadTCP}}},
}

// A TCP service's labels name its fields without "tcp."; it needs no host
// and carries the breaker's connect-level fields.
func TestDecodeTCPLabels(t *testing.T) {
	lc, ds := DecodeTCPLabels(map[string]string{
		"listener": "postgres", "port": "5432", "maxConnections": "10",
		"circuitBreaker.consecutiveFailures": "3", "healthCheck.interval": "5s",
	}, cfgSrc, func(f string) string { return "levee.tcp.pg." + f })
	if len(ds) != 0 || !lc.Routable {
		t.Fatalf("routable %v, diagnostics %v", lc.Routable, ds)
	}
	ep := lc.Entrypoint
	want := TCP{Listener: "postgres", ConnectTimeout: DefaultTCPConnectTimeout, IdleTimeout: DefaultTCPIdleTimeout, MaxConnections: 10}
	if ep.Protocol != ProtocolTCP || !reflect.DeepEqual(ep.TCP, want) || lc.Port != 5432 {
		t.Errorf("got protocol %q tcp %+v port %d, want tcp %+v port 5432", ep.Protocol, ep.TCP, lc.Port, want)
	}
	if ep.HealthCheck == nil || ep.HealthCheck.Interval != 5*time.Second {
		t.Errorf("health check %+v, want a connect check every 5s", ep.HealthCheck)
	}
	if ep.CircuitBreaker == nil || ep.CircuitBreaker.Params.ConsecutiveFailures != 3 {
		t.Errorf("breaker %+v, want consecutiveFailures 3", ep.CircuitBreaker)
	}
}

// An HTTP field on a TCP service is W093 and ignored, and so is a tcp.*
// field on an HTTP service; a TCP service without a listener is E008.
func TestTCPFieldsApplyToTheirProtocolOnly(t *testing.T) {
	key := func(f string) string { return "levee.tcp.pg." + f }
	lc, ds := DecodeTCPLabels(map[string]string{"listener": "pg", "host": "db.example.com", "tls": "passthrough"}, cfgSrc, key)
	if got := cfgWithCode(ds, diagnostics.TCPFieldIgnored); len(got) != 2 {
		t.Errorf("want W093 for host and for tls without sni, got %v", ds)
	}
	if !lc.Routable || len(lc.Entrypoint.Hosts) != 0 || lc.Entrypoint.TCP.TLS != "" {
		t.Errorf("routable %v hosts %v tls %q", lc.Routable, lc.Entrypoint.Hosts, lc.Entrypoint.TCP.TLS)
	}
	lc, ds = DecodeTCPLabels(map[string]string{"port": "5432"}, cfgSrc, key)
	if lc.Routable || len(cfgWithCode(ds, diagnostics.TCPNoListener)) != 1 {
		t.Errorf("no listener: routable %v, diagnostics %v", lc.Routable, ds)
	}
	lc, ds = DecodeTCPLabels(map[string]string{"listener": "Postgres!"}, cfgSrc, key)
	if lc.Routable || len(cfgWithCode(ds, diagnostics.TCPNoListener)) != 1 || len(cfgWithCode(ds, diagnostics.BadTCP)) != 1 {
		t.Errorf("bad listener: routable %v, diagnostics %v", lc.Routable, ds)
	}
	lc, ds = DecodeLabels(map[string]string{"host": "a.example.com", "tcp.listener": "pg"}, cfgSrc, cfgLabelKey)
	if len(cfgWithCode(ds, diagnostics.TCPFieldIgnored)) != 1 || lc.Entrypoint.TCP.Listener != "" {
		t.Errorf("tcp.listener on an HTTP route: %v, tcp %+v", ds, lc.Entrypoint.TCP)
	}
}

// A TCP payload round-trips with its protocol.
func TestTCPPayloadRoundTrips(t *testing.T) {
	body := `{"name":"db","protocol":"Tcp","backends":[{"address":"10.0.0.5","port":5432}],"config":{"tcp":{"listener":"websecure","sni":["db.example.com"],"connect_timeout":"2s"}}}`
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
	if err != nil || len(ds) != 0 {
		t.Fatalf("decode: %v %v", err, ds)
	}
	if ep.TCP.TLS != "" || ep.TCP.ConnectTimeout != 2*time.Second {
		t.Errorf("tcp %+v", ep.TCP)
	}
	enc, err := EncodeEntrypoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	back, ds, err := DecodeEntrypoint(FormatJSON, enc, diagnostics.Source{})
	if err != nil || len(ds) != 0 || !reflect.DeepEqual(back, ep) {
		t.Errorf("round trip: %v %v\n got %+v\nwant %+v\n%s", err, ds, back, ep, enc)
	}
}
