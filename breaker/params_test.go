package breaker

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func mustStatuses(t *testing.T, s string) StatusSet {
	t.Helper()
	set, err := ParseStatuses(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestParseStatuses(t *testing.T) {
	cases := []struct {
		in, canonical string
		has, hasNot   []int
		wantErr       bool
	}{
		{in: "500,502-504", canonical: "500,502-504", has: []int{500, 502, 503, 504}, hasNot: []int{501, 505, 499}},
		{in: "5xx", canonical: "500-599", has: []int{500, 599}, hasNot: []int{499, 600}},
		{in: " 429 , 5XX ", canonical: "429,500-599", has: []int{429, 550}},
		{in: "2xx,3xx", canonical: "200-399", has: []int{200, 399}},
		{in: "", canonical: ""},
		{in: "500-499", wantErr: true},
		{in: "600", wantErr: true},
		{in: "99", wantErr: true},
		{in: "abc", wantErr: true},
		{in: "500-x", wantErr: true},
		{in: "6xx", wantErr: true},
	}
	for _, tc := range cases {
		set, err := ParseStatuses(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseStatuses(%q) = %v, want error", tc.in, set)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ParseStatuses(%q): %v", tc.in, err)
		}
		if got := set.String(); got != tc.canonical {
			t.Errorf("ParseStatuses(%q).String() = %q, want %q", tc.in, got, tc.canonical)
		}
		if again := mustStatuses(t, set.String()); again != set {
			t.Errorf("%q does not round-trip", tc.in)
		}
		if set.IsEmpty() != (tc.canonical == "") {
			t.Errorf("%q IsEmpty = %v", tc.in, set.IsEmpty())
		}
		for _, c := range tc.has {
			if !set.Has(c) {
				t.Errorf("%q lacks %d", tc.in, c)
			}
		}
		for _, c := range tc.hasNot {
			if set.Has(c) {
				t.Errorf("%q has %d", tc.in, c)
			}
		}
	}
}

// Behaviour 11: classification.
func TestClassify(t *testing.T) {
	def := DefaultParams()
	custom := Params{FailureStatuses: mustStatuses(t, "502-504,429"), SuccessStatuses: mustStatuses(t, "2xx")}
	unvalidated := Params{} // empty failure list = default 500-599
	cases := []struct {
		p      Params
		status int
		want   Result
	}{
		{def, 200, Success}, {def, 404, Success}, {def, 499, Success}, {def, 500, Failure}, {def, 503, Failure}, {def, 599, Failure},
		{unvalidated, 500, Failure}, {unvalidated, 404, Success},
		{custom, 200, Success}, {custom, 503, Failure}, {custom, 429, Failure},
		{custom, 500, Neutral}, {custom, 404, Neutral}, {custom, 301, Neutral},
	}
	for _, tc := range cases {
		if got := tc.p.Classify(tc.status); got != tc.want {
			t.Errorf("Classify(%d) with failures %q successes %q = %v, want %v",
				tc.status, tc.p.FailureStatuses, tc.p.SuccessStatuses, got, tc.want)
		}
	}
}

func TestDefaultParams(t *testing.T) {
	p := DefaultParams()
	if p.Threshold != 0.5 || p.MinRequests != 20 || p.Window != 0 || p.Cooldown != 10*time.Second ||
		p.MaxCooldown != p.Cooldown || p.ProbeTimeout != p.Cooldown || p.HalfOpenProbes != 1 ||
		p.SuccessesToClose != 1 || p.FailureStatuses.String() != "500-599" || !p.SuccessStatuses.IsEmpty() ||
		p.Mode != Enforce || p.ConsecutiveFailures != 0 || p.SlowCallThreshold != 0 || p.CooldownJitter != 0 || p.RecoveryDuration != 0 {
		t.Fatalf("DefaultParams = %+v", p)
	}
	if v, errs := (Params{}).Validate(); !reflect.DeepEqual(v, p) || errs != nil {
		t.Fatalf("zero Params validate to %+v %v, want the defaults", v, errs)
	}
	if v, errs := p.Validate(); !reflect.DeepEqual(v, p) || errs != nil {
		t.Fatal("Validate is not idempotent on the defaults")
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		in    Params
		field string
		value string
		def   string
		check func(Params) bool
	}{
		{"threshold > 1", Params{Threshold: 1.5}, "threshold", "1.5", "0.5", func(p Params) bool { return p.Threshold == 0.5 }},
		{"threshold negative", Params{Threshold: -0.1}, "threshold", "-0.1", "0.5", func(p Params) bool { return p.Threshold == 0.5 }},
		{"threshold NaN", Params{Threshold: math.NaN()}, "threshold", "NaN", "0.5", func(p Params) bool { return p.Threshold == 0.5 }},
		{"minRequests negative", Params{MinRequests: -3}, "minRequests", "-3", "20", func(p Params) bool { return p.MinRequests == 20 }},
		{"minRequests huge", Params{MinRequests: 1 << 40}, "minRequests", "1099511627776", "20", func(p Params) bool { return p.MinRequests == 20 }},
		{"window too short", Params{Window: time.Millisecond}, "window", "1ms", "0s", func(p Params) bool { return p.Window == 0 }},
		{"window negative", Params{Window: -time.Second}, "window", "-1s", "0s", func(p Params) bool { return p.Window == 0 }},
		{"consecutiveFailures negative", Params{ConsecutiveFailures: -1}, "consecutiveFailures", "-1", "0", func(p Params) bool { return p.ConsecutiveFailures == 0 }},
		{"slowCallDuration negative", Params{SlowCallDuration: -time.Second}, "slowCallDuration", "-1s", "0s", func(p Params) bool { return p.SlowCallDuration == 0 }},
		{"slowCallThreshold > 1", Params{SlowCallThreshold: 2}, "slowCallThreshold", "2", "0", func(p Params) bool { return p.SlowCallThreshold == 0 }},
		{"cooldown negative", Params{Cooldown: -time.Second}, "cooldown", "-1s", "10s", func(p Params) bool { return p.Cooldown == 10*time.Second }},
		{"maxCooldown below cooldown", Params{Cooldown: 20 * time.Second, MaxCooldown: 5 * time.Second}, "maxCooldown", "5s", "20s", func(p Params) bool { return p.MaxCooldown == 20*time.Second }},
		{"halfOpenProbes negative", Params{HalfOpenProbes: -1}, "halfOpenProbes", "-1", "1", func(p Params) bool { return p.HalfOpenProbes == 1 }},
		{"halfOpenProbes huge", Params{HalfOpenProbes: MaxHalfOpenProbes + 1}, "halfOpenProbes", "10001", "1", func(p Params) bool { return p.HalfOpenProbes == 1 }},
		{"successesToClose negative", Params{SuccessesToClose: -2}, "successesToClose", "-2", "1", func(p Params) bool { return p.SuccessesToClose == 1 }},
		{"probeTimeout negative", Params{Cooldown: 3 * time.Second, ProbeTimeout: -1}, "probeTimeout", "-1ns", "3s", func(p Params) bool { return p.ProbeTimeout == 3*time.Second }},
		{"cooldownJitter > 1", Params{CooldownJitter: 1.01}, "cooldownJitter", "1.01", "0", func(p Params) bool { return p.CooldownJitter == 0 }},
		{"recoveryDuration negative", Params{RecoveryDuration: -time.Second}, "recoveryDuration", "-1s", "0s", func(p Params) bool { return p.RecoveryDuration == 0 }},
		{"mode unknown", Params{Mode: 7}, "mode", "mode(7)", "enforce", func(p Params) bool { return p.Mode == Enforce }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, errs := tc.in.Validate()
			if len(errs) != 1 {
				t.Fatalf("errors %v, want one", errs)
			}
			e := errs[0]
			if e.Field != tc.field || e.Value != tc.value || e.Default != tc.def || e.Reason == "" {
				t.Fatalf("error %+v, want field %s value %s default %s", e, tc.field, tc.value, tc.def)
			}
			if !tc.check(out) {
				t.Fatalf("field not defaulted: %+v", out)
			}
			if again, errs := out.Validate(); errs != nil || !reflect.DeepEqual(again, out) {
				t.Fatalf("validated params do not validate cleanly: %v", errs)
			}
			if e.Error() == "" {
				t.Fatal("empty Error()")
			}
		})
	}
	// Derived defaults follow the configured cooldown; several bad fields
	// are all reported.
	p, errs := Params{Cooldown: 3 * time.Second, Threshold: 2, HalfOpenProbes: -1}.Validate()
	if p.MaxCooldown != 3*time.Second || p.ProbeTimeout != 3*time.Second || len(errs) != 2 {
		t.Fatalf("derived defaults %+v, errors %v", p, errs)
	}
	// Breakers built from invalid params use the validated ones.
	b := NewWithParams("x", Params{MinRequests: -1, Threshold: 9}, Options{})
	if got := b.Params(); got.MinRequests != 20 || got.Threshold != 0.5 {
		t.Fatalf("breaker params %+v", got)
	}
}

func TestStrings(t *testing.T) {
	for want, got := range map[string]string{
		"closed": Closed.String(), "open": Open.String(), "half-open": HalfOpen.String(),
		"error_ratio": RuleErrorRatio.String(), "consecutive_failures": RuleConsecutiveFailures.String(),
		"slow_calls": RuleSlowCalls.String(), "half_open_probe_failed": RuleHalfOpenProbeFailed.String(),
		"manual": RuleManual.String(), "enforce": Enforce.String(), "shadow": Shadow.String(),
		"success": Success.String(), "failure": Failure.String(), "neutral": Neutral.String(),
	} {
		if got != want {
			t.Errorf("String() = %q, want %q", got, want)
		}
	}
	if m, err := ParseMode("Shadow"); err != nil || m != Shadow {
		t.Errorf("ParseMode(Shadow) = %v, %v", m, err)
	}
	if _, err := ParseMode("off"); err == nil {
		t.Error("ParseMode(off) accepted")
	}
}
