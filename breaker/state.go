package breaker

import (
	"strconv"
	"time"
)

// State is a breaker state.
type State uint8

// The three breaker states.
const (
	Closed State = iota
	Open
	HalfOpen
)

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// Rule says why a breaker opened.
type Rule uint8

// Trip rules. RuleNone marks transitions that are not openings by a rule
// (half-open after the cooldown, closed after successful probes).
const (
	RuleNone Rule = iota
	RuleErrorRatio
	RuleConsecutiveFailures
	RuleSlowCalls
	RuleHalfOpenProbeFailed
	RuleManual
)

// String returns the rule's name as used in events and metrics:
// "", "error_ratio", "consecutive_failures", "slow_calls",
// "half_open_probe_failed", "manual".
func (r Rule) String() string {
	switch r {
	case RuleNone:
		return ""
	case RuleErrorRatio:
		return "error_ratio"
	case RuleConsecutiveFailures:
		return "consecutive_failures"
	case RuleSlowCalls:
		return "slow_calls"
	case RuleHalfOpenProbeFailed:
		return "half_open_probe_failed"
	case RuleManual:
		return "manual"
	}
	return "rule(" + strconv.Itoa(int(r)) + ")"
}

// Result is how one request went, as far as the breaker is concerned.
type Result uint8

// Results. Neutral counts neither way (a client that cancelled, a status in
// neither list) but still frees a half-open probe slot.
const (
	Success Result = iota
	Failure
	Neutral
)

// String returns "success", "failure" or "neutral".
func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Neutral:
		return "neutral"
	}
	return "result(" + strconv.Itoa(int(r)) + ")"
}

// Outcome is what a caller reports for an admitted request.
type Outcome struct {
	Result Result
	// Elapsed is how long the call took, for the slow-call rule (a call
	// slower than SlowCallDuration is slow, whatever its Result).
	Elapsed time.Duration
	// RetryAfter is the upstream's Retry-After on a failure. If this
	// failure trips the breaker, the open period lasts at least this long
	// (capped at MaxCooldown).
	RetryAfter time.Duration
}

// Transition is one state change, as delivered to observers.
type Transition struct {
	Name string
	From State
	To   State
	// Rule is why the breaker opened (To == Open), RuleManual for operator
	// actions, RuleNone otherwise.
	Rule Rule
	At   time.Time
	// RetryAfter is, for an opening, how long the breaker stays open
	// (backoff, upstream Retry-After and jitter applied); 0 for a forced
	// opening and for other transitions.
	RetryAfter time.Duration
	// Generation is the breaker generation after the transition.
	Generation uint64
}

// Event names the transition as the event catalogue does: "opened",
// "half-open" or "closed". The half-open event is spelled as the state
// (State.String), so the API, the events, the logs and the metrics use one
// spelling and a filter written for one matches the others.
func (t Transition) Event() string {
	switch t.To {
	case Open:
		return "opened"
	case HalfOpen:
		return HalfOpen.String()
	default:
		return "closed"
	}
}

// Stats is a consistent snapshot of a breaker.
type Stats struct {
	Name       string
	State      State
	Mode       Mode
	Generation uint64
	// Forced is true while the breaker is held open by ForceOpen.
	Forced bool

	// Window figures: outcomes currently in the window, of which failures
	// and slow calls, and the resulting ratios (0 when empty).
	WindowTotal    int
	WindowFailures int
	WindowSlow     int
	FailureRatio   float64
	SlowRatio      float64
	// ConsecutiveFailures is the current closed-state failure streak.
	ConsecutiveFailures int

	// Cumulative counts since creation or Reset. Admitted counts
	// admissions, Rejected rejections (in shadow mode: requests that would
	// have been rejected).
	Admitted  uint64
	Rejected  uint64
	Successes uint64
	Failures  uint64
	Neutral   uint64

	// Half-open figures.
	ProbesInFlight int
	ProbeSuccesses int

	// Trips is the number of consecutive openings since the last full
	// close: the backoff exponent of the next opening.
	Trips int
	// OpenedAt is when the breaker last opened (zero if never).
	OpenedAt time.Time
	// RetryAfter is, while open, the whole seconds until half-open
	// (at least 1s); 0 in other states.
	RetryAfter time.Duration
	// Recovering is true during the post-close traffic ramp;
	// RecoveryShare is the share of traffic currently admitted.
	Recovering    bool
	RecoveryShare float64

	// LastTransition is the most recent transition (zero if none).
	LastTransition Transition
}
