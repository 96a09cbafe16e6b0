package config

import (
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

func init() {
	fieldCompanions["rateLimit.scope"] = map[string]string{"rateLimit.average": "10"}
	roundTripCompanions["rateLimit.scope"] = []string{"rateLimit.average"}
	fieldCases = append(fieldCases, fieldCase{field: "rateLimit.scope", get: func(d cfgDecoded) any { return accessOf(d).RateLimit.Scope },
		valid:   []validCase{{"fleet", "", ScopeFleet}, {"FLEET", "", ScopeFleet}, {"local", "", ""}},
		invalid: []invalidCase{{label: "cluster", code: diagnostics.BadRateLimit}, {label: "1", json: "1", code: diagnostics.BadRateLimit}}})
	fieldCompanions["inFlight.scope"] = map[string]string{"inFlight.amount": "10"}
	roundTripCompanions["inFlight.scope"] = []string{"inFlight.amount"}
	fieldCases = append(fieldCases, fieldCase{field: "inFlight.scope", get: func(d cfgDecoded) any { return accessOf(d).InFlight.Scope },
		valid:   []validCase{{"fleet", "", ScopeFleet}, {"FLEET", "", ScopeFleet}, {"local", "", ""}},
		invalid: []invalidCase{{label: "cluster", code: diagnostics.BadInFlight}, {label: "1", json: "1", code: diagnostics.BadInFlight}}})
}

// A bad scope is W053 and the limit stays local: the rest of the rate
// limit applies.
func TestBadRateScopeIsLocal(t *testing.T) {
	lc, ds := DecodeLabels(map[string]string{"host": "a.com", "rateLimit.average": "5", "rateLimit.scope": "everywhere"}, cfgSrc, cfgLabelKey)
	if len(ds) != 1 || ds[0].Code != diagnostics.BadRateLimit {
		t.Fatalf("diagnostics %v, want one W053", ds)
	}
	if rl := lc.Entrypoint.Access.RateLimit; rl == nil || rl.Average != 5 || rl.Scope != "" {
		t.Fatalf("rate limit %+v, want a local limit of 5", rl)
	}
}

// A bad in-flight scope is W054 and the limit stays local.
func TestBadInFlightScopeIsLocal(t *testing.T) {
	lc, ds := DecodeLabels(map[string]string{"host": "a.com", "inFlight.amount": "5", "inFlight.scope": "everywhere"}, cfgSrc, cfgLabelKey)
	if len(ds) != 1 || ds[0].Code != diagnostics.BadInFlight {
		t.Fatalf("diagnostics %v, want one %s", ds, diagnostics.BadInFlight)
	}
	if fl := lc.Entrypoint.Access.InFlight; fl == nil || fl.Amount != 5 || fl.Scope != "" {
		t.Fatalf("in-flight limit %+v, want a local limit of 5", fl)
	}
}
