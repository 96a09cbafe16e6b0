package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// The fallback rows join TestFieldTable's cases from here, so that the
// table test covers them like every other field.
func init() { fieldCases = append(fieldCases, fallbackCases...) }

func cbFallback(d cfgDecoded) Fallback {
	if d.ep.CircuitBreaker == nil {
		return Fallback{}
	}
	return d.ep.CircuitBreaker.Fallback
}

var fallbackCases = []fieldCase{
	{field: "circuitBreaker.fallback", get: func(d cfgDecoded) any { return cbFallback(d).Route },
		valid: []validCase{{"maintenance", "", "maintenance"}, {"read_only.v2", "", "read_only.v2"}, {"", `""`, ""}},
		invalid: []invalidCase{
			{label: "two words", code: diagnostics.BadFallback}, {label: "-x", code: diagnostics.BadFallback},
			{label: "a/b", code: diagnostics.BadFallback},
		}},
	{field: "circuitBreaker.fallbackStatus", get: func(d cfgDecoded) any { return cbFallback(d).Status },
		valid: []validCase{{"503", "503", 503}, {"200", `"200"`, 200}, {"0", "0", 0}},
		invalid: []invalidCase{
			{label: "99", json: "99", code: diagnostics.BadFallback}, {label: "600", json: "600", code: diagnostics.BadFallback},
			{label: "teapot", code: diagnostics.BadFallback}, {label: "204", json: "204", code: diagnostics.BadFallback},
			{label: "304", json: "304", code: diagnostics.BadFallback},
		}},
	{field: "circuitBreaker.serveStale", get: func(d cfgDecoded) any { return cbFallback(d).ServeStale },
		valid: []validCase{{"10m", "", 10 * time.Minute}, {"30", "30", 30 * time.Second}, {"0", "0", time.Duration(0)}},
		invalid: []invalidCase{
			{label: "-1s", code: diagnostics.BadFallback}, {label: "25h", code: diagnostics.BadFallback},
			{label: "stale", code: diagnostics.BadFallback},
		}},
	{field: "circuitBreaker.serveStaleForCredentials", get: func(d cfgDecoded) any { return cbFallback(d).ServeStaleForCredentials },
		valid:   []validCase{{"true", "true", true}, {"false", "false", false}},
		invalid: []invalidCase{{label: "maybe", code: diagnostics.BadFallback}}},
}

// A fallback field alone turns the breaker on, with its defaults, as any
// circuitBreaker.* field does: a fallback needs a breaker to trip.
func TestFallbackTurnsBreakerOn(t *testing.T) {
	d, ds := decodeLabel(t, "circuitBreaker.fallback", "maint")
	if len(ds) != 0 {
		t.Fatalf("diagnostics %v", ds)
	}
	cb := d.ep.CircuitBreaker
	if cb == nil || cb.ResponseCode != DefaultResponseCode || cb.Scope != ScopeRoute || cb.Fallback.Route != "maint" {
		t.Fatalf("breaker %+v", cb)
	}
}

func TestFallbackRoundTrip(t *testing.T) {
	body := `{"name":"app","backends":[{"address":"a","port":81}],"config":{"hostnames":["a.com"],
	  "circuit_breaker":{"fallback":"maint","fallback_status":503,"serve_stale":"5m","serve_stale_for_credentials":true}}}`
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
	if err != nil || len(ds) != 0 {
		t.Fatalf("decode: %v %v", err, ds)
	}
	want := Fallback{Route: "maint", Status: 503, ServeStale: 5 * time.Minute, ServeStaleForCredentials: true}
	if ep.CircuitBreaker.Fallback != want {
		t.Fatalf("fallback %+v, want %+v", ep.CircuitBreaker.Fallback, want)
	}
	enc, err := EncodeEntrypoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	again, ds, err := DecodeEntrypoint(FormatJSON, enc, diagnostics.Source{})
	if err != nil || len(ds) != 0 || !reflect.DeepEqual(ep, again) {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v\n%s", err, again, ep, enc)
	}
	// Without fallback fields the canonical payload still states them
	// (every field explicit), and they decode back to none.
	ep.CircuitBreaker.Fallback = Fallback{}
	enc, _ = EncodeEntrypoint(ep)
	wantJSON := `"fallback":"","fallback_status":0,"serve_stale":"0s","serve_stale_for_credentials":false`
	if !strings.Contains(string(enc), wantJSON) {
		t.Errorf("payload without fallback: %s, want %s", enc, wantJSON)
	}
	again, ds, err = DecodeEntrypoint(FormatJSON, enc, diagnostics.Source{})
	if err != nil || len(ds) != 0 || !reflect.DeepEqual(ep, again) {
		t.Fatalf("round trip without fallback: %v %v", err, ds)
	}
}

// serveStale on a route whose requests all carry credentials the stale
// cache cannot key by is reported: it would keep nothing.
func TestServeStaleOnAnAuthRouteIsReported(t *testing.T) {
	const hash = "$2a$04$Zjn3LZUgYlVdNrDSqKrJF.mwdtAD4Lk0ot6fLFbPmRo0u53ZQDkEm"
	for _, c := range []struct {
		access, stale string
		want          bool
	}{
		{`"forward_auth":{"address":"http://auth:4181","auth_request_headers":["X-Api-Key"]},`, `"serve_stale":"5m"`, true},
		{`"basic_auth":{"users":["alice:` + hash + `"]},`, `"serve_stale":"5m"`, true},
		{`"forward_auth":{"address":"http://auth:4181"},`, `"serve_stale":"5m","serve_stale_for_credentials":true`, true},
		{`"forward_auth":{"address":"http://auth:4181","auth_request_headers":["X-Api-Key"]},`, `"serve_stale":"5m","serve_stale_for_credentials":true`, false},
		{`"basic_auth":{"users":["alice:` + hash + `"]},`, `"serve_stale":"5m","serve_stale_for_credentials":true`, false},
		{`"ip_allow_list":{"source_range":["10.0.0.0/8"]},`, `"serve_stale":"5m"`, false},
		{`"forward_auth":{"address":"http://auth:4181"},`, `"serve_stale":"0s"`, false},
	} {
		body := `{"name":"app","backends":[{"address":"a","port":81}],"config":{"hostnames":["a.com"],` + c.access +
			`"circuit_breaker":{` + c.stale + `}}}`
		_, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		got := cfgWithCode(ds, diagnostics.StaleNeverKept)
		if (len(got) == 1) != c.want || len(got) > 1 {
			t.Errorf("%s %s: %v, want W025 %v", c.access, c.stale, got, c.want)
		}
		if len(got) == 1 && got[0].Key != "config.circuit_breaker.serve_stale" {
			t.Errorf("W025 key %q", got[0].Key)
		}
	}
	// Labels name the label key.
	_, ds := decodeLabel(t, "circuitBreaker.serveStale", "5m")
	if len(cfgWithCode(ds, diagnostics.StaleNeverKept)) != 0 {
		t.Errorf("W025 without an auth policy: %v", ds)
	}
}
