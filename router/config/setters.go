package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
)

// The field setters: each turns one decoded value into the draft
// entrypoint, or into a diagnostic and the field's fallback.

// validRouteHost is the rule for a host name a route is configured with,
// by label or API (already lower-cased, trailing dot removed): at most 253
// bytes of dot-separated labels of [a-z0-9_-] not starting with '-',
// optionally behind a "*." wildcard; no scheme, path, port or IPv6
// literal. It is stricter than router/httpx/server's validHost, which checks a
// request's Host header byte by byte as net/http does (any case, a port,
// an IPv6 literal): a configured host is a route-table key, compared with
// the request's host after the router lower-cases it and strips its port,
// so it must already be in that form, and a mistake such as a URL or
// host:port is reported with its diagnostic instead of becoming a route
// that never matches.
func validRouteHost(h string) bool {
	if len(h) == 0 || len(h) > 253 {
		return false
	}
	h = strings.TrimPrefix(h, "*.")
	for _, label := range strings.Split(h, ".") {
		if !hostLabelRe.MatchString(label) {
			return false
		}
	}
	return true
}

func setHosts(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.Hosts = normalizeList(items, func(h string) (string, bool) {
		norm := strings.TrimSuffix(strings.ToLower(h), ".")
		return norm, validRouteHost(norm)
	}, func(h string) {
		d.add(f.Code, key, h, "",
			fmt.Sprintf("invalid host %q dropped: want a host name without scheme, path or port (a leading *. is a wildcard)", h), "")
	})
}

// normalizeList keeps, in order and without repeats, the items normalize
// accepts (normalised); reject is told of each item it refuses.
func normalizeList(items []string, normalize func(string) (string, bool), reject func(string)) []string {
	seen := map[string]bool{}
	var out []string
	for _, item := range items {
		norm, ok := normalize(item)
		switch {
		case !ok:
			reject(item)
		case !seen[norm]:
			seen[norm] = true
			out = append(out, norm)
		}
	}
	return out
}

// decode parses v and checks the result (check may be nil); on an error of
// either it records the field's diagnostic, so the default stays, and
// reports false.
func decode[T any](d *draft, f *Field, key string, v any, parse func(any) (T, error), check func(T) error) (T, bool) {
	x, err := parse(v)
	if err == nil && check != nil {
		err = check(x)
	}
	if err != nil {
		d.bad(f, key, v, err.Error())
		var zero T
		return zero, false
	}
	return x, true
}

// between checks that an integer lies in [lo, hi]; text is the range as
// the diagnostic states it.
func between(lo, hi int, text string) func(int) error {
	return func(n int) error {
		if n < lo || n > hi {
			return fmt.Errorf("must be in %s", text)
		}
		return nil
	}
}

// The port and weight rules, shared by labels and the API's backends list.
var (
	checkPort   = between(1, 65535, "1-65535")
	checkWeight = between(0, MaxWeight, fmt.Sprintf("0-%d", MaxWeight))
)

// sizeBetween checks that a size lies in [lo, hi] bytes; text is the
// range as the diagnostic states it.
func sizeBetween(lo, hi int64, text string) func(int64) error {
	return func(n int64) error {
		if n < lo || n > hi {
			return fmt.Errorf("must be %s", text)
		}
		return nil
	}
}

func positive(t time.Duration) error {
	if t <= 0 {
		return fmt.Errorf("must be positive")
	}
	return nil
}

func setPort(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toInt, checkPort); ok {
		d.port = n
	}
}

// badPathChar reports characters that cannot be in a path prefix as written
// in config (query, fragment, whitespace, controls).
func badPathChar(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool {
		return r == '?' || r == '#' || unicode.IsSpace(r) || unicode.IsControl(r)
	}) >= 0
}

func hasDotSegment(s string) bool {
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." || seg == "." {
			return true
		}
	}
	return false
}

func setPath(d *draft, f *Field, key string, v any) {
	s, err := toString(v)
	switch {
	case err != nil:
	case s == "":
		err = fmt.Errorf("empty path")
	case badPathChar(s):
		err = fmt.Errorf("a path prefix has no query, fragment or spaces")
	case hasDotSegment(s):
		err = fmt.Errorf("no . or .. segments")
	}
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	norm := s
	if !strings.HasPrefix(norm, "/") {
		norm = "/" + norm
	}
	// Request paths are matched in their normal form (docs/operations.md,
	// request paths): no run of slashes, no ";" parameter. A prefix with
	// either could never match; it is brought into that form.
	if strings.Contains(norm, "//") || strings.Contains(norm, ";") {
		norm = normalSegments(norm)
		if hasDotSegment(norm) {
			d.bad(f, key, v, "no . or .. segments")
			return
		}
	}
	if len(norm) > 1 {
		norm = strings.TrimRight(norm, "/")
		if norm == "" {
			norm = "/"
		}
	}
	if norm != s {
		d.add(diagnostics.PathDefaulted, key, s, norm, fmt.Sprintf("path %q normalised to %q", s, norm), "")
	}
	d.ep.Path = norm
}

// normalSegments removes the ";" parameters of every segment of p and
// merges runs of slashes, as the proxy does to a request path.
func normalSegments(p string) string {
	var segs []string
	for seg := range strings.SplitSeq(p, "/") {
		seg, _, _ = strings.Cut(seg, ";")
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	out := "/" + strings.Join(segs, "/")
	if strings.HasSuffix(p, "/") && out != "/" {
		out += "/"
	}
	return out
}

func setPathRegex(d *draft, f *Field, key string, v any) {
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if len(s) > 1024 {
			return fmt.Errorf("longer than 1024 bytes")
		}
		if s == "" {
			return nil
		}
		_, err := regexp.Compile(s)
		return err
	})
	if ok {
		d.ep.PathRegex = s
	}
}

func setPriority(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toInt, between(-1_000_000, 1_000_000, "-1000000..1000000")); ok {
		d.ep.Priority = n
	}
}

func setMethods(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.Methods = normalizeList(items, func(m string) (string, bool) {
		up := strings.ToUpper(m)
		return up, methodNames[up]
	}, func(m string) {
		d.add(f.Code, key, m, "", fmt.Sprintf("unknown HTTP method %q: dropped", m), "")
	})
}

func setPathCaseInsensitive(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.ep.PathCaseInsensitive = b
	}
}

func setStripPrefix(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.ep.StripPrefix = b
	}
}

func setAddPrefix(d *draft, f *Field, key string, v any) {
	s, err := toString(v)
	switch {
	case err != nil:
	case s == "":
		d.ep.AddPrefix = ""
		return
	case !strings.HasPrefix(s, "/"):
		err = fmt.Errorf("must start with /")
	case badPathChar(s):
		err = fmt.Errorf("no query, fragment or spaces")
	}
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.AddPrefix = s
}

func setLoadBalancer(d *draft, f *Field, key string, v any) {
	s, err := toString(v)
	if err == nil {
		if lb, ok := lbAliases[strings.ToLower(s)]; ok {
			d.ep.LoadBalancer = lb
			return
		}
		err = fmt.Errorf("want round_robin (rr), random, power_of_two (p2c) or least_connections (leastconn)")
	}
	d.bad(f, key, v, err.Error())
}

func setWeight(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toInt, checkWeight); ok {
		d.weight, d.weightSet = n, true
	}
}

func setBackendTimeout(d *draft, f *Field, key string, v any) {
	if t, ok := decode(d, f, key, v, toDuration, positive); ok {
		d.ep.BackendTimeout = t
	}
}

func setRetryAttempts(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toInt, between(1, MaxRetryAttempts, fmt.Sprintf("1-%d (total tries)", MaxRetryAttempts))); ok {
		d.ep.Retry.Attempts = n
	}
}

func setRetryBodyBuffer(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toSize, sizeBetween(1, MaxRetryBodyBuffer, "1 byte-16MiB")); ok {
		d.ep.Retry.BodyBuffer = n
	}
}

func setMaxRequestBodyBytes(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toSize, sizeBetween(1, math.MaxInt64, "at least 1 byte")); ok {
		d.ep.MaxRequestBodyBytes = n
	}
}

func setHealthPath(d *draft, f *Field, key string, v any) {
	d.hcSet = true
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if !strings.HasPrefix(s, "/") || strings.IndexFunc(s, unicode.IsSpace) >= 0 || strings.Contains(s, "#") {
			return fmt.Errorf("must start with / and have no spaces or fragment")
		}
		return nil
	})
	if ok {
		d.hc.Path = s
	}
}

func setHealthStatus(d *draft, f *Field, key string, v any) {
	d.hcSet = true
	st, ok := decode(d, f, key, v, toStatuses, func(st breaker.StatusSet) error {
		if st.IsEmpty() {
			return fmt.Errorf("empty status list")
		}
		return nil
	})
	if ok {
		d.hc.Status = st
	}
}

func setHealthDuration(ptr func(*HealthCheck) *time.Duration) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		d.hcSet = true
		if t, ok := decode(d, f, key, v, toDuration, positive); ok {
			*ptr(&d.hc) = t
		}
	}
}

func setHealthCount(ptr func(*HealthCheck) *int) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		d.hcSet = true
		if n, ok := decode(d, f, key, v, toInt, between(1, 100, "1-100")); ok {
			*ptr(&d.hc) = n
		}
	}
}

// healthDuration and healthCount read and write one field of the health
// check.
func healthDuration(ptr func(*HealthCheck) *time.Duration) readWrite {
	return readWrite{setHealthDuration(ptr), inHealth(func(h *HealthCheck) any { return *ptr(h) })}
}

func healthCount(ptr func(*HealthCheck) *int) readWrite {
	return readWrite{setHealthCount(ptr), inHealth(func(h *HealthCheck) any { return *ptr(h) })}
}

func setPassiveFailures(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toInt, between(1, MaxConsecutiveFailures, fmt.Sprintf("1-%d", MaxConsecutiveFailures))); ok {
		d.ep.PassiveHealth.ConsecutiveFailures = n
	}
}

func setPassiveDuration(ptr func(*PassiveHealth) *time.Duration) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		if t, ok := decode(d, f, key, v, toDuration, positive); ok {
			*ptr(&d.ep.PassiveHealth) = t
		}
	}
}

// passiveDuration reads and writes one duration of passive health.
func passiveDuration(ptr func(*PassiveHealth) *time.Duration) readWrite {
	return readWrite{setPassiveDuration(ptr), inPassive(func(p *PassiveHealth) any { return *ptr(p) })}
}

func setPassiveShare(d *draft, f *Field, key string, v any) {
	share, ok := decode(d, f, key, v, toFloat, func(x float64) error {
		if x <= 0 || x > 1 {
			return fmt.Errorf("must be a share in (0, 1]")
		}
		return nil
	})
	if ok {
		d.ep.PassiveHealth.MaxEjectedShare = share
	}
}

func setBreakerEnabled(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.cbEnabled = &b
	}
}

// breakerName is the breaker's own name of a field ("minRequests"), which
// Params.Validate uses in its FieldErrors.
func breakerName(f *Field) string { return strings.TrimPrefix(f.Label, "circuitBreaker.") }

// setBreaker decodes one breaker parameter with parse. Zero means "default"
// in breaker.Params for some fields; an operator who writes 0 there made a
// mistake, so a non-nil zeroErr rejects it rather than letting the default
// apply silently.
func setBreaker[T comparable](ptr func(*breaker.Params) *T, parse func(any) (T, error), zeroErr error) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		d.cbSet = true
		x, ok := decode(d, f, key, v, parse, func(x T) error {
			var zero T
			if zeroErr != nil && x == zero {
				return zeroErr
			}
			return nil
		})
		if ok {
			*ptr(&d.cb.Params) = x
			d.cbGiven[breakerName(f)] = givenValue{key, displayValue(v)}
		}
	}
}

// breakerParam reads and writes one breaker parameter (see setBreaker).
func breakerParam[T comparable](ptr func(*breaker.Params) *T, parse func(any) (T, error), zeroErr error) readWrite {
	return readWrite{setBreaker(ptr, parse, zeroErr), inBreaker(func(c *CircuitBreaker) any { return *ptr(&c.Params) })}
}

// Reasons a breaker parameter's zero is refused (see setBreaker).
var (
	errZeroRatio    = errors.New("must be a ratio in (0, 1]")
	errZeroCount    = errors.New("must be at least 1")
	errZeroDuration = errors.New("must be a positive duration")
)

func setBreakerMode(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	s, err := toString(v)
	if err == nil {
		var m breaker.Mode
		if m, err = breaker.ParseMode(s); err == nil {
			d.cb.Params.Mode = m
			return
		}
		err = fmt.Errorf("want enforce or shadow")
	}
	d.bad(f, key, v, err.Error())
}

func setBreakerResponseCode(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	if n, ok := decode(d, f, key, v, toInt, between(200, 599, "200-599")); ok {
		d.cb.ResponseCode = n
	}
}

func setBreakerResponseBody(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	s, ok := scalarText(v)
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("want a string")
	case len(s) > 4096:
		err = fmt.Errorf("longer than 4096 bytes")
	}
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.cb.ResponseBody = s
}

func setBreakerScope(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	s, err := toString(v)
	if err == nil {
		switch strings.ToLower(s) {
		case ScopeRoute:
			d.cb.Scope = ScopeRoute
			return
		case ScopeBackend:
			d.cb.Scope = ScopeBackend
			return
		}
		err = fmt.Errorf("want route or backend")
	}
	d.bad(f, key, v, err.Error())
}
