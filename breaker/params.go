package breaker

import "time"

// Mode says whether a breaker rejects requests.
type Mode uint8

const (
	// Enforce rejects requests while open (the default).
	Enforce Mode = iota
	// Shadow judges, transitions and emits events exactly as Enforce but
	// never rejects: operators try thresholds on live traffic.
	Shadow
)

// StatusSet is a set of HTTP status codes 100-599.
type StatusSet struct{ bits [10]uint64 }

// Params are a breaker's parameters. The zero value of a field means
// "default" where the doc says so; use Validate to normalise.
type Params struct {
	Threshold           float64       // failure ratio that trips, in (0,1]; default 0.5
	MinRequests         int           // outcomes the window must hold (>=1); default 20
	Window              time.Duration // 0 = count window of MinRequests outcomes; >0 = rolling time window
	ConsecutiveFailures int           // failures in a row that trip; 0 = off
	SlowCallDuration    time.Duration // calls slower than this are slow; 0 = off
	SlowCallThreshold   float64       // slow ratio that trips, in (0,1]; 0 = off
	Cooldown            time.Duration // open duration; default 10s
	MaxCooldown         time.Duration // cap for exponential backoff; 0 = Cooldown
	HalfOpenProbes      int           // concurrent probes in half-open; default 1
	SuccessesToClose    int           // consecutive probe successes that close; default 1
	ProbeTimeout        time.Duration // a probe unreported after this frees its slot; 0 = Cooldown
	FailureStatuses     StatusSet     // empty = 500-599
	SuccessStatuses     StatusSet     // empty = unset (every non-failure status is a success)
	CooldownJitter      float64       // extra random fraction of the open duration, [0,1]
	RecoveryDuration    time.Duration // linear traffic ramp after closing; 0 = off
	Mode                Mode
}
