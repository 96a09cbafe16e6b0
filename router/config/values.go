package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/breaker"
)

// A config value arrives either as a label string or as a decoded JSON/YAML
// value. Both are held as one of: string, json.Number, bool, []any,
// map[string]any or nil. The converters below accept the typed JSON form and
// the string form alike, so "20" (label) and 20 (JSON) mean the same and the
// same mistake yields the same diagnostic whichever way it came in.

// display renders v as the diagnostic's Value: strings as given, numbers
// and booleans as written, lists and objects as compact JSON.
func displayValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case json.Number:
		return string(x)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// scalarText returns the text of a scalar (string, number, bool).
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return string(x), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func toString(v any) (string, error) {
	s, ok := scalarText(v)
	if !ok {
		return "", fmt.Errorf("want a string")
	}
	return strings.TrimSpace(s), nil
}

func toInt(v any) (int, error) {
	if _, isBool := v.(bool); isBool {
		return 0, fmt.Errorf("want a whole number")
	}
	s, ok := scalarText(v)
	if !ok {
		return 0, fmt.Errorf("want a whole number")
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("want a whole number")
	}
	return n, nil
}

func toFloat(v any) (float64, error) {
	if _, isBool := v.(bool); isBool {
		return 0, fmt.Errorf("want a number")
	}
	s, ok := scalarText(v)
	if !ok {
		return 0, fmt.Errorf("want a number")
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("want a number")
	}
	return f, nil
}

// ParseBool accepts true/false, 1/0, yes/no and on/off in any case: what
// operators actually write in compose files.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("parse boolean %q: want true/false, 1/0, yes/no or on/off", s)
}

func toBool(v any) (bool, error) {
	if b, ok := v.(bool); ok {
		return b, nil
	}
	s, ok := scalarText(v)
	if !ok {
		return false, fmt.Errorf("want a boolean")
	}
	b, err := ParseBool(s)
	if err != nil {
		return false, fmt.Errorf("want true/false, 1/0, yes/no or on/off")
	}
	return b, nil
}

// ParseDuration accepts whole seconds ("10", as Sōzune) and Go durations
// ("1500ms", "2m").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n > math.MaxInt64/int64(time.Second) || n < math.MinInt64/int64(time.Second) {
			return 0, fmt.Errorf("parse duration %q: out of range", s)
		}
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("parse duration %q: want whole seconds (10) or a Go duration (1500ms, 2m)", s)
	}
	return d, nil
}

func toDuration(v any) (time.Duration, error) {
	if _, isBool := v.(bool); isBool {
		return 0, fmt.Errorf("want whole seconds or a Go duration such as 1500ms")
	}
	s, ok := scalarText(v)
	if !ok {
		return 0, fmt.Errorf("want whole seconds or a Go duration such as 1500ms")
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want whole seconds or a Go duration such as 1500ms")
	}
	return d, nil
}

// sizeUnits are the suffixes a size may carry: binary (KiB = 1024) and
// decimal (KB = 1000, as Traefik and most tools write them), any case.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

const sizeWant = "want a size: bytes (1048576) or a whole number with KiB, MiB, GiB, KB, MB or GB (1MiB)"

// toSize reads a size in bytes: a whole number, optionally followed by a
// unit (sizeUnits).
func toSize(v any) (int64, error) {
	if _, isBool := v.(bool); isBool {
		return 0, errors.New(sizeWant)
	}
	s, ok := scalarText(v)
	if !ok {
		return 0, errors.New(sizeWant)
	}
	s = strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, errors.New(sizeWant)
	}
	return n * mult, nil
}

// SplitList splits a comma-separated list, trimming items and dropping
// empty ones.
func SplitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// toList accepts a comma-separated string or a JSON/YAML list of scalars.
func toList(v any) ([]string, error) {
	if items, ok := v.([]any); ok {
		var out []string
		for _, it := range items {
			s, ok := scalarText(it)
			if !ok {
				return nil, fmt.Errorf("want a list of strings")
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, nil
	}
	s, ok := scalarText(v)
	if !ok {
		return nil, fmt.Errorf("want a comma-separated list")
	}
	return SplitList(s), nil
}

// toStatuses accepts "500,502-504", "5xx", a single number, or a list of
// numbers and ranges.
func toStatuses(v any) (breaker.StatusSet, error) {
	items, err := toList(v)
	if err != nil {
		return breaker.StatusSet{}, fmt.Errorf("want a status list such as 500,502-504 or 5xx")
	}
	set, err := breaker.ParseStatuses(strings.Join(items, ","))
	if err != nil {
		return breaker.StatusSet{}, fmt.Errorf("want a status list such as 500,502-504 or 5xx (codes 100-599)")
	}
	return set, nil
}
