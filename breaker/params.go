package breaker

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Mode says whether a breaker rejects requests.
type Mode uint8

const (
	// Enforce rejects requests while open (the default).
	Enforce Mode = iota
	// Shadow judges, transitions and emits events exactly as Enforce but
	// never rejects: operators try thresholds on live traffic.
	Shadow
)

// String returns "enforce" or "shadow".
func (m Mode) String() string {
	switch m {
	case Enforce:
		return "enforce"
	case Shadow:
		return "shadow"
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses "enforce" or "shadow" (case-insensitive).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "enforce":
		return Enforce, nil
	case "shadow":
		return Shadow, nil
	}
	return Enforce, fmt.Errorf("parse breaker mode %q: want enforce or shadow", s)
}

// StatusSet is a set of HTTP status codes 100-599.
type StatusSet struct{ bits [10]uint64 }

const (
	minStatus = 100
	maxStatus = 599
)

// Has reports whether code is in the set.
func (s StatusSet) Has(code int) bool {
	if code < minStatus || code > maxStatus {
		return false
	}
	return s.bits[code>>6]&(1<<(uint(code)&63)) != 0
}

// IsEmpty reports whether the set holds no status.
func (s StatusSet) IsEmpty() bool { return s == StatusSet{} }

func (s *StatusSet) addRange(lo, hi int) {
	for c := lo; c <= hi; c++ {
		s.bits[c>>6] |= 1 << (uint(c) & 63)
	}
}

// String renders the set canonically as comma-separated codes and ranges,
// e.g. "500,502-504"; ParseStatuses accepts it back. The empty set is "".
func (s StatusSet) String() string {
	var sb strings.Builder
	for c := minStatus; c <= maxStatus; c++ {
		if !s.Has(c) {
			continue
		}
		hi := c
		for hi+1 <= maxStatus && s.Has(hi+1) {
			hi++
		}
		if sb.Len() > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.Itoa(c))
		if hi > c {
			sb.WriteByte('-')
			sb.WriteString(strconv.Itoa(hi))
		}
		c = hi
	}
	return sb.String()
}

// ParseStatuses parses a comma-separated list of status codes, ranges
// ("502-504") and classes ("5xx"), e.g. "500,502-504" or "5xx,429".
// Every code must be in 100-599. An empty string gives the empty set.
func ParseStatuses(s string) (StatusSet, error) {
	var set StatusSet
	for _, item := range strings.Split(s, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		if item == "" {
			continue
		}
		if len(item) == 3 && item[1:] == "xx" && item[0] >= '1' && item[0] <= '5' {
			lo := int(item[0]-'0') * 100
			set.addRange(lo, lo+99)
			continue
		}
		loS, hiS, isRange := strings.Cut(item, "-")
		lo, err := strconv.Atoi(strings.TrimSpace(loS))
		if err != nil {
			return StatusSet{}, fmt.Errorf("parse statuses %q: item %q: %w", s, item, err)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(strings.TrimSpace(hiS)); err != nil {
				return StatusSet{}, fmt.Errorf("parse statuses %q: item %q: %w", s, item, err)
			}
		}
		if lo < minStatus || hi > maxStatus || lo > hi {
			return StatusSet{}, fmt.Errorf("parse statuses %q: item %q: want codes in %d-%d, low before high", s, item, minStatus, maxStatus)
		}
		set.addRange(lo, hi)
	}
	return set, nil
}

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

// Defaults and limits of the parameters. The limits keep a typo from
// allocating gigabytes (window and probe slots are pre-allocated).
const (
	DefaultThreshold   = 0.5
	DefaultMinRequests = 20
	DefaultCooldown    = 10 * time.Second
	// MaxMinRequests bounds MinRequests (the count window holds that many outcomes).
	MaxMinRequests = 100_000
	// MaxHalfOpenProbes bounds HalfOpenProbes (one slot each).
	MaxHalfOpenProbes = 10_000
	// MinWindow is the shortest time window: buckets are a tenth of it.
	MinWindow = time.Second
)

// DefaultParams returns the parameters used when nothing is configured,
// with every derived default applied (MaxCooldown and ProbeTimeout equal to
// Cooldown, FailureStatuses 500-599).
func DefaultParams() Params {
	p := Params{
		Threshold:        DefaultThreshold,
		MinRequests:      DefaultMinRequests,
		Cooldown:         DefaultCooldown,
		MaxCooldown:      DefaultCooldown,
		HalfOpenProbes:   1,
		SuccessesToClose: 1,
		ProbeTimeout:     DefaultCooldown,
		Mode:             Enforce,
	}
	p.FailureStatuses.addRange(500, 599)
	return p
}

// FieldError describes one invalid parameter and the default used instead.
// Field is the label name (e.g. "minRequests"); the config layer turns it
// into a diagnostic.
type FieldError struct {
	Field   string // label name, e.g. "minRequests"
	Value   string // the rejected value as given
	Default string // the value used instead
	Reason  string // what a valid value looks like
}

// Error implements error.
func (e FieldError) Error() string {
	return fmt.Sprintf("breaker %s=%s: %s; using %s", e.Field, e.Value, e.Reason, e.Default)
}

// Validate returns p with every zero "default" field and every invalid field
// replaced by its default, derived defaults applied, and one FieldError per
// invalid field. It never panics; Validate of its own result returns it
// unchanged with no errors.
func (p Params) Validate() (Params, []FieldError) {
	var errs []FieldError
	d := DefaultParams()
	bad := func(field, value, def, reason string) {
		errs = append(errs, FieldError{Field: field, Value: value, Default: def, Reason: reason})
	}
	ratio := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

	switch {
	case p.Threshold == 0:
		p.Threshold = d.Threshold
	case math.IsNaN(p.Threshold) || p.Threshold < 0 || p.Threshold > 1:
		bad("threshold", ratio(p.Threshold), ratio(d.Threshold), "must be a ratio in (0, 1]")
		p.Threshold = d.Threshold
	}
	switch {
	case p.MinRequests == 0:
		p.MinRequests = d.MinRequests
	case p.MinRequests < 0 || p.MinRequests > MaxMinRequests:
		bad("minRequests", strconv.Itoa(p.MinRequests), strconv.Itoa(d.MinRequests),
			fmt.Sprintf("must be an integer in 1-%d", MaxMinRequests))
		p.MinRequests = d.MinRequests
	}
	if p.Window != 0 && p.Window < MinWindow {
		bad("window", p.Window.String(), "0s", "must be 0 (count window) or a duration of at least "+MinWindow.String())
		p.Window = 0
	}
	if p.ConsecutiveFailures < 0 {
		bad("consecutiveFailures", strconv.Itoa(p.ConsecutiveFailures), "0", "must be 0 (off) or a positive integer")
		p.ConsecutiveFailures = 0
	}
	if p.SlowCallDuration < 0 {
		bad("slowCallDuration", p.SlowCallDuration.String(), "0s", "must be 0 (off) or a positive duration")
		p.SlowCallDuration = 0
	}
	if math.IsNaN(p.SlowCallThreshold) || p.SlowCallThreshold < 0 || p.SlowCallThreshold > 1 {
		bad("slowCallThreshold", ratio(p.SlowCallThreshold), "0", "must be 0 (off) or a ratio in (0, 1]")
		p.SlowCallThreshold = 0
	}
	switch {
	case p.Cooldown == 0:
		p.Cooldown = d.Cooldown
	case p.Cooldown < 0:
		bad("cooldown", p.Cooldown.String(), d.Cooldown.String(), "must be a positive duration")
		p.Cooldown = d.Cooldown
	}
	switch {
	case p.MaxCooldown == 0:
		p.MaxCooldown = p.Cooldown
	case p.MaxCooldown < p.Cooldown:
		bad("maxCooldown", p.MaxCooldown.String(), p.Cooldown.String(), "must be at least cooldown")
		p.MaxCooldown = p.Cooldown
	}
	switch {
	case p.HalfOpenProbes == 0:
		p.HalfOpenProbes = d.HalfOpenProbes
	case p.HalfOpenProbes < 0 || p.HalfOpenProbes > MaxHalfOpenProbes:
		bad("halfOpenProbes", strconv.Itoa(p.HalfOpenProbes), strconv.Itoa(d.HalfOpenProbes),
			fmt.Sprintf("must be an integer in 1-%d", MaxHalfOpenProbes))
		p.HalfOpenProbes = d.HalfOpenProbes
	}
	switch {
	case p.SuccessesToClose == 0:
		p.SuccessesToClose = d.SuccessesToClose
	case p.SuccessesToClose < 0:
		bad("successesToClose", strconv.Itoa(p.SuccessesToClose), strconv.Itoa(d.SuccessesToClose), "must be a positive integer")
		p.SuccessesToClose = d.SuccessesToClose
	}
	switch {
	case p.ProbeTimeout == 0:
		p.ProbeTimeout = p.Cooldown
	case p.ProbeTimeout < 0:
		bad("probeTimeout", p.ProbeTimeout.String(), p.Cooldown.String(), "must be a positive duration")
		p.ProbeTimeout = p.Cooldown
	}
	if p.FailureStatuses.IsEmpty() {
		p.FailureStatuses = d.FailureStatuses
	}
	if math.IsNaN(p.CooldownJitter) || p.CooldownJitter < 0 || p.CooldownJitter > 1 {
		bad("cooldownJitter", ratio(p.CooldownJitter), "0", "must be a fraction in [0, 1]")
		p.CooldownJitter = 0
	}
	if p.RecoveryDuration < 0 {
		bad("recoveryDuration", p.RecoveryDuration.String(), "0s", "must be 0 (off) or a positive duration")
		p.RecoveryDuration = 0
	}
	if p.Mode != Enforce && p.Mode != Shadow {
		bad("mode", p.Mode.String(), Enforce.String(), "must be enforce or shadow")
		p.Mode = Enforce
	}
	return p, errs
}

// Classify turns an HTTP status into an outcome: a status in
// FailureStatuses (default 500-599) is a Failure; otherwise, if
// SuccessStatuses is set, a status in it is a Success and any other is
// Neutral; if SuccessStatuses is unset every other status is a Success.
// Transport errors and timeouts have no status: report them as Failure.
// An empty FailureStatuses means the default 500-599, as in Validate.
func (p Params) Classify(status int) Result {
	failures := p.FailureStatuses
	if failures.IsEmpty() {
		if status >= 500 && status <= 599 {
			return Failure
		}
	} else if failures.Has(status) {
		return Failure
	}
	if p.SuccessStatuses.IsEmpty() || p.SuccessStatuses.Has(status) {
		return Success
	}
	return Neutral
}

// slowRule reports whether the slow-call rule is on.
func (p *Params) slowRule() bool { return p.SlowCallDuration > 0 && p.SlowCallThreshold > 0 }
