// Package diagnostics is the single catalogue of Levee's diagnostic codes and
// the Diagnostic value that every config source produces.
//
// A diagnostic is how Levee reports a configuration problem without failing:
// a bad label or API field falls back to a default (warn), a default is
// applied quietly (info), or one service cannot be routed at all (error).
// Every code is defined once in the catalogue (see Catalogue) with its
// severity, title, effect, fix and example; logs, the REST API,
// `levee explain` and docs/diagnostics.md are all derived from it.
package diagnostics

import (
	"fmt"
	"strings"
)

// Code identifies one kind of diagnostic, e.g. "W024". A published code never
// changes meaning.
type Code string

// Severity says what a diagnostic did to the object it is about.
type Severity uint8

const (
	// Info: a default was applied quietly; nothing is wrong.
	Info Severity = iota
	// Warn: a field had a bad value and fell back to its default; the
	// service is still routed.
	Warn
	// Error: the service (or object) is not routed, or is routed denying
	// every request (an access policy Levee cannot read).
	Error
)

// String returns "info", "warn" or "error".
func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warn:
		return "warn"
	case Error:
		return "error"
	}
	return fmt.Sprintf("severity(%d)", uint8(s))
}

// MarshalText implements encoding.TextMarshaler so JSON carries the name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSeverity parses "info", "warn" (or "warning") and "error", in any case.
func ParseSeverity(s string) (Severity, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "info":
		return Info, nil
	case "warn", "warning":
		return Warn, nil
	case "error":
		return Error, nil
	}
	return 0, fmt.Errorf("unknown severity %q (want info, warn or error)", s)
}

// Source names where a diagnostic's object came from.
type Source struct {
	// Provider is the config source: "docker", "api", "compose" (validate).
	Provider string `json:"provider"`
	// ObjectID identifies the object within the provider: a container ID,
	// an API entrypoint id.
	ObjectID string `json:"object_id,omitempty"`
	// ObjectName is the human name: a container name, an entrypoint name.
	ObjectName string `json:"object"`
	// Service is the service name within the object (the <service> part of
	// a label key), when the diagnostic is about one service.
	Service string `json:"service,omitempty"`
}

// Diagnostic is one configuration finding about one object.
type Diagnostic struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	Source   Source   `json:"source"`
	// Key is the label key as written, or the JSON path for API input
	// (e.g. "config.circuit_breaker.threshold").
	Key string `json:"key,omitempty"`
	// Value is the offending value as given.
	Value string `json:"value,omitempty"`
	// Fallback is what was applied instead (a default), if anything.
	Fallback string `json:"fallback,omitempty"`
	// Message says what is wrong, in one sentence.
	Message string `json:"message"`
	// Hint is a suggestion, such as a did-you-mean for an unknown key.
	Hint string `json:"hint,omitempty"`
}

// New builds a diagnostic with the severity the catalogue gives its code,
// so that no producer can contradict the catalogue. A code missing from the
// catalogue (a test forbids it) is treated as a warning.
func New(code Code, src Source, key, value, fallback, message, hint string) Diagnostic {
	sev := Warn
	if e, ok := Lookup(code); ok {
		sev = e.Severity
	}
	return Diagnostic{Code: code, Severity: sev, Source: src, Key: key, Value: value,
		Fallback: fallback, Message: message, Hint: hint}
}

// String renders the diagnostic on one line for humans.
func (d Diagnostic) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", d.Code, d.Severity)
	if d.Source.ObjectName != "" {
		fmt.Fprintf(&b, " %s", d.Source.ObjectName)
	}
	if d.Key != "" {
		fmt.Fprintf(&b, " %s", d.Key)
	}
	if d.Value != "" {
		fmt.Fprintf(&b, "=%q", d.Value)
	}
	fmt.Fprintf(&b, ": %s", d.Message)
	// A message that already names what applies ("using 8080, the
	// container's only exposed port") is not followed by it again.
	if d.Fallback != "" && !strings.Contains(d.Message, "using "+d.Fallback) {
		fmt.Fprintf(&b, " (using %s)", d.Fallback)
	}
	if d.Hint != "" {
		fmt.Fprintf(&b, "; %s", d.Hint)
	}
	return b.String()
}
