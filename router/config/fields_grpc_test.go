package config

import (
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

func init() {
	fieldCases = append(fieldCases, fieldCase{field: "circuitBreaker.grpcFailureStatuses",
		get: func(d cfgDecoded) any { return d.ep.CircuitBreaker.GRPCFailureStatuses },
		valid: []validCase{{"UNAVAILABLE,resource_exhausted", `["UNAVAILABLE","resource_exhausted"]`, GRPCCodes(1<<14 | 1<<8)},
			{"14, 4", `[14, 4]`, GRPCCodes(1<<14 | 1<<4)}, {"none", `["none"]`, GRPCCodes(0)}},
		invalid: []invalidCase{{label: "UNAVAILABLE,BROKEN", json: `["UNAVAILABLE","BROKEN"]`, code: diagnostics.BadGRPCStatuses},
			{label: "17", json: `[17]`, code: diagnostics.BadGRPCStatuses}, {label: "OK", json: `["OK"]`, code: diagnostics.BadGRPCStatuses}}},
		fieldCase{field: "healthCheck.grpc", get: func(d cfgDecoded) any { return cfgHealth(d).GRPC },
			valid:   []validCase{{"true", `true`, true}, {"off", `false`, false}},
			invalid: []invalidCase{{label: "maybe", json: `"maybe"`, code: diagnostics.BadGRPCHealthCheck}}},
		fieldCase{field: "healthCheck.grpcService", get: func(d cfgDecoded) any { return cfgHealth(d).GRPCService },
			valid: []validCase{{"shop.Cart", "", "shop.Cart"}, {"grpc.health.v1.Health", "", "grpc.health.v1.Health"}, {"", "", ""}},
			invalid: []invalidCase{{label: "shop/Cart", code: diagnostics.BadGRPCHealthCheck, fallback: ""},
				{label: "shop..Cart", code: diagnostics.BadGRPCHealthCheck, fallback: ""}, {label: "1shop", code: diagnostics.BadGRPCHealthCheck, fallback: ""}}})
}

func TestGRPCFailureStatusesDefault(t *testing.T) {
	cb := DefaultCircuitBreaker()
	got := cb.GRPCFailureStatuses.Names()
	if len(got) != 3 || got[0] != "DEADLINE_EXCEEDED" || got[1] != "INTERNAL" || got[2] != "UNAVAILABLE" {
		t.Fatalf("default %v, want DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE", got)
	}
	if cb.GRPCFailureStatuses.Has(2) || !cb.GRPCFailureStatuses.Has(14) || cb.GRPCFailureStatuses.Has(99) {
		t.Fatal("Has disagrees with the default")
	}
}
