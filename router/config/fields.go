package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
)

// Defaults of the entrypoint fields (see Fields for the full table).
const (
	DefaultPath           = "/"
	DefaultLoadBalancer   = RoundRobin
	DefaultBackendTimeout = 30 * time.Second
	DefaultWeight         = 100
	DefaultRetryAttempts  = 1
	// DefaultPort is the last resort of the port choice (no port label, no
	// exposed port) and the port of an API backend without one.
	DefaultPort = 80
	// DefaultResponseCode and DefaultResponseBody are what an open breaker
	// answers: 503 Service Unavailable (written out, as every HTTP name in
	// this package, so that it does not link net/http).
	DefaultResponseCode = 503
	DefaultResponseBody = "upstream circuit open"

	DefaultHealthPath     = "/"
	DefaultHealthStatus   = "200-399"
	DefaultHealthTimeout  = 5 * time.Second
	DefaultHealthInterval = 10 * time.Second
	DefaultHealthRise     = 2
	DefaultHealthFall     = 3

	// The passive-ejection defaults: 5 failures in a row eject a backend
	// for 10s, doubled on each ejection in a row up to 5m, and at most half
	// of a route's backends are ejected at once.
	DefaultConsecutiveFailures = 5
	DefaultEjectTime           = 10 * time.Second
	DefaultMaxEjectTime        = 5 * time.Minute
	DefaultMaxEjectedShare     = 0.5
	// MaxConsecutiveFailures bounds passiveHealth.consecutiveFailures.
	MaxConsecutiveFailures = 1000

	// MaxRetryAttempts bounds retry.attempts.
	MaxRetryAttempts = 10
	// DefaultRetryBodyBuffer is the largest request body buffered for
	// retries on a route that sets no retry.bodyBuffer; MaxRetryBodyBuffer
	// bounds retry.bodyBuffer (each request may hold that much memory).
	DefaultRetryBodyBuffer = 64 << 10
	MaxRetryBodyBuffer     = 16 << 20
	// MaxWeight bounds a backend's weight.
	MaxWeight = 1_000_000
)

// DefaultEntrypoint returns an entrypoint with every field at its default
// and no identity, hosts or backends.
func DefaultEntrypoint() Entrypoint {
	return Entrypoint{
		Protocol:       ProtocolHTTP,
		Path:           DefaultPath,
		LoadBalancer:   DefaultLoadBalancer,
		BackendTimeout: DefaultBackendTimeout,
		Retry:          Retry{Attempts: DefaultRetryAttempts},
		PassiveHealth:  DefaultPassiveHealth(),
	}
}

// DefaultPassiveHealth returns the passive-ejection settings of a route
// that sets none.
func DefaultPassiveHealth() PassiveHealth {
	return PassiveHealth{
		ConsecutiveFailures: DefaultConsecutiveFailures,
		EjectTime:           DefaultEjectTime,
		MaxEjectTime:        DefaultMaxEjectTime,
		MaxEjectedShare:     DefaultMaxEjectedShare,
	}
}

// DefaultHealthCheck returns the health check used once any healthCheck.*
// field is set: the fields not given take these values.
func DefaultHealthCheck() HealthCheck {
	st, _ := breaker.ParseStatuses(DefaultHealthStatus)
	return HealthCheck{
		Path:     DefaultHealthPath,
		Status:   st,
		Timeout:  DefaultHealthTimeout,
		Interval: DefaultHealthInterval,
		Rise:     DefaultHealthRise,
		Fall:     DefaultHealthFall,
	}
}

// DefaultCircuitBreaker returns the breaker used once any circuitBreaker.*
// field is set: the fields not given take these values.
func DefaultCircuitBreaker() CircuitBreaker {
	return CircuitBreaker{
		Params:       breaker.DefaultParams(),
		ResponseCode: DefaultResponseCode,
		ResponseBody: DefaultResponseBody,
		Scope:        ScopeRoute,

		GRPCFailureStatuses: DefaultGRPCFailureStatuses,
	}
}

// Kind is the type of a config field as operators see it.
type Kind string

// Field kinds.
const (
	KindString   Kind = "string"
	KindInt      Kind = "integer"
	KindFloat    Kind = "number"
	KindBool     Kind = "boolean"
	KindDuration Kind = "duration"
	KindList     Kind = "list"
	KindStatuses Kind = "status list"
	KindEnum     Kind = "enum"
	KindSize     Kind = "size"
)

// Field is one row of the config table: the one definition from which label
// parsing, JSON/YAML decoding, validation, encoding and docs/labels.md all
// derive.
type Field struct {
	// Label is the key after <prefix>.<protocol>.<service>., camelCase,
	// e.g. "circuitBreaker.threshold".
	Label string
	// LabelAliases are other accepted label keys (e.g. Sōzune's "prefix").
	LabelAliases []string
	// JSON is the path in the API payload, e.g.
	// "config.circuit_breaker.threshold". Paths starting with "backends[]"
	// are per-backend fields, decoded with the backends.
	JSON string
	// JSONAliases are other accepted JSON paths (e.g. "…cooldown_secs").
	JSONAliases []string
	Kind        Kind
	// Values lists the accepted values of an enum.
	Values []string
	// Default is the value used when the field is absent or invalid, as
	// text.
	Default string
	// Doc explains the field in one or two sentences.
	Doc string
	// Example is a valid label value.
	Example string
	// Code is the diagnostic a bad value produces.
	Code diagnostics.Code

	// set parses and checks a value into the draft entrypoint; get reads
	// the field back out of a decoded one for the payload (encode.go). A
	// row made from one accessor of the field gives rw instead, both made
	// from it (breakerParam, healthCount...).
	set func(d *draft, f *Field, key string, v any)
	get getter
	rw  readWrite
}

// Fields returns the config table, in documentation order.
func Fields() []Field {
	out := make([]Field, len(fieldTable))
	copy(out, fieldTable)
	for i := range out {
		out[i].set, out[i].get, out[i].rw = nil, nil, readWrite{}
	}
	return out
}

var fieldTable = buildFieldTable()

var (
	hostLabelRe = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,62})$`)
	// methodNames are the methods of RFC 9110 and PATCH (RFC 5789), the
	// ones net/http names.
	methodNames = map[string]bool{
		"GET": true, "HEAD": true, "POST": true, "PUT": true,
		"PATCH": true, "DELETE": true, "CONNECT": true,
		"OPTIONS": true, "TRACE": true,
	}
	lbAliases = map[string]string{
		RoundRobin: RoundRobin, "rr": RoundRobin, "roundrobin": RoundRobin,
		Random:     Random,
		PowerOfTwo: PowerOfTwo, "p2c": PowerOfTwo,
		LeastConnections: LeastConnections, "leastconn": LeastConnections, "least_conn": LeastConnections,
	}
)

// buildFieldTable joins the field groups in documentation order. Each
// feature keeps its rows in its own file (fields_<group>.go) so that the
// table stays one table without one file holding every feature.
func buildFieldTable() []Field {
	t := slices.Concat(coreFields(), fallbackFields(), tlsFields(), backendTLSFields(), accessPolicyFields(), transformPolicyFields(), errorPagesFields(), namedPolicyFields(), grpcFields(), tcpFields(), proxyProtocolFields(), earlyDataFields(), udpFields(), rateLimitScopeFields())
	for i := range t {
		if t[i].rw.set != nil {
			t[i].set, t[i].get = t[i].rw.set, t[i].rw.get
		}
	}
	return t
}

// coreFields are routing, balancing, resilience, health and the breaker.
func coreFields() []Field {
	cbDef := breaker.DefaultParams()
	return []Field{
		// Routing.
		{Label: "host", JSON: "config.hostnames", Kind: KindList, Default: "(required)", Code: diagnostics.BadHost,
			Doc:     "Host names the service answers, comma-separated; `*.example.com` matches any sub-domain of example.com. Matching is case-insensitive and ignores the port of the request's Host header; a configured host must not carry a port (W032). Without a valid host the service is not routed (E002).",
			Example: "app.example.com,*.app.example.com", set: setHosts, get: value(func(ep *Entrypoint) any { return nonNil(ep.Hosts) })},
		{Label: "port", JSON: "backends[].port", Kind: KindInt, Default: "only exposed port, else lowest exposed, else 80", Code: diagnostics.BadPort,
			Doc:     "Port of the container that receives the traffic (1-65535). Without it Levee chooses and says so (I002).",
			Example: "8080", set: setPort, get: ofBackend(func(b *Backend) any { return b.Port })},
		{Label: "path", LabelAliases: []string{"prefix"}, JSON: "config.path", Kind: KindString, Default: "/", Code: diagnostics.BadPath,
			Doc:     "Path prefix, segment-aware (`/api` matches `/api` and `/api/x`, not `/apix`); the longest prefix wins. `prefix` is an alias. It is matched against the request path in its normal form (runs of slashes merged, `;` parameters removed, dot segments and encoded separators refused), the form the backend receives too ([operations.md](operations.md#request-paths)).",
			Example: "/api", set: setPath, get: value(func(ep *Entrypoint) any { return ep.Path })},
		{Label: "path.caseInsensitive", JSON: "config.path_case_insensitive", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "Matches `path` the way a case-insensitive backend (IIS, ASP.NET on Windows, a Windows or macOS file system) reads a path: without regard to ASCII case and to the dots and spaces that end a segment, so `/ADMIN`, `/Admin/x` and `/admin./x` all match `path=/admin`. Set it on every guarded route whose backend reads paths that way; otherwise such a spelling matches an open route beside it and the backend serves the guarded page. `stripPrefix` removes the matched segments whatever their spelling; `pathRegex` is matched against the folded path (segments without their trailing dots and spaces), ignoring case.",
			Example: "true", set: setPathCaseInsensitive, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.PathCaseInsensitive }))},
		{Label: "pathRegex", JSON: "config.path_regex", Kind: KindString, Default: "(none)", Code: diagnostics.BadPathRegex,
			Doc:     "A Go (RE2) regular expression the request path must also match.",
			Example: "^/api/v[0-9]+/", set: setPathRegex, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.PathRegex }))},
		{Label: "priority", JSON: "config.priority", Kind: KindInt, Default: "0", Code: diagnostics.BadPriority,
			Doc:     "Breaks ties between routes with the same host and path length (and collisions, W018); higher wins.",
			Example: "10", set: setPriority, get: value(func(ep *Entrypoint) any { return ep.Priority })},
		{Label: "methods", JSON: "config.methods", Kind: KindList, Default: "(all)", Code: diagnostics.BadMethod,
			Doc:     "Restricts the route to these HTTP methods, comma-separated, any case.",
			Example: "GET,HEAD", set: setMethods, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.Methods }))},
		{Label: "stripPrefix", JSON: "config.strip_prefix", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "Removes the matched path prefix before forwarding (`/api/x` → `/x`).",
			Example: "true", set: setStripPrefix, get: value(func(ep *Entrypoint) any { return ep.StripPrefix })},
		{Label: "addPrefix", JSON: "config.add_prefix", Kind: KindString, Default: "(none)", Code: diagnostics.BadRewrite,
			Doc:     "Prepended to the (possibly stripped) path before forwarding.",
			Example: "/v1", set: setAddPrefix, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.AddPrefix }))},
		// Balancing.
		{Label: "loadBalancer", JSON: "config.load_balancer", Kind: KindEnum, Default: RoundRobin, Code: diagnostics.BadLoadBalancer,
			Values:  []string{RoundRobin + " (rr)", Random, PowerOfTwo + " (p2c)", LeastConnections + " (leastconn)"},
			Doc:     "How a backend is picked among the service's backends.",
			Example: "least_connections", set: setLoadBalancer, get: value(func(ep *Entrypoint) any { return ep.LoadBalancer })},
		{Label: "weight", JSON: "backends[].weight", Kind: KindInt, Default: strconv.Itoa(DefaultWeight), Code: diagnostics.BadWeight,
			Doc:     "Relative weight of this container's backend (0-1000000); 0 keeps it wired but never picked.",
			Example: "50", set: setWeight, get: ofBackend(func(b *Backend) any { return b.Weight })},
		// Resilience.
		{Label: "backendTimeout", JSON: "config.backend_timeout", Kind: KindDuration, Default: DefaultBackendTimeout.String(), Code: diagnostics.BadTimeout,
			Doc:     "How long Levee waits for a backend's response headers (whole seconds or a Go duration).",
			Example: "15s", set: setBackendTimeout, get: value(func(ep *Entrypoint) any { return ep.BackendTimeout })},
		{Label: "retry.attempts", JSON: "config.retry.attempts", Kind: KindInt, Default: strconv.Itoa(DefaultRetryAttempts), Code: diagnostics.BadRetry,
			Doc:     "Total number of tries (1-10; 1 = no retry). A failed attempt (transport error, timeout, failure status) of an idempotent request (GET, HEAD, OPTIONS, PUT, DELETE, TRACE) that may have reached the backend is tried again on another backend when there is one; retries are capped at 20% extra attempts per route. A connection that was refused or whose connect timed out never reached the backend: that request goes to another backend whatever its method and whatever this number, outside the cap, once per backend. Bodies over `retry.bodyBuffer` (64KiB by default) are sent once and not retried.",
			Example: "3", set: setRetryAttempts, get: value(func(ep *Entrypoint) any { return ep.Retry.Attempts })},
		{Label: "retry.bodyBuffer", JSON: "config.retry.body_buffer", Kind: KindSize, Default: "64KiB", Code: diagnostics.BadBodyBuffer,
			Doc:     "The largest request body Levee reads into memory before sending it, so that a retry (or a refused connect) can send it again, and so that a slow client holds no backend connection while it uploads (1 byte-16MiB). A larger body streams to the backend once and is never retried. Each request on the route may hold this much memory while it is read.",
			Example: "1MiB", set: setRetryBodyBuffer, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.Retry.BodyBuffer }))},
		{Label: "maxRequestBodyBytes", JSON: "config.max_request_body_bytes", Kind: KindSize, Default: "(no limit)", Code: diagnostics.BadBodyLimit,
			Doc:     "The largest request body the route accepts. A request whose Content-Length is larger is answered 413 (`X-Levee-Diagnostic: body-too-large`) before any backend is asked; a chunked body is cut off at the limit: 413 if the backend has not answered yet (the backend's exchange is aborted), else the backend's answer stands (it answered without reading the whole body). Never counted against the backend or its breaker.",
			Example: "10MiB", set: setMaxRequestBodyBytes, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.MaxRequestBodyBytes }))},
		{Label: "healthCheck.path", JSON: "config.health_check.path", Kind: KindString, Default: DefaultHealthPath, Code: diagnostics.BadHealthCheck,
			Doc:     "Path probed on each backend. Setting any healthCheck.* field turns active health checks on.",
			Example: "/healthz", set: setHealthPath, get: inHealth(func(h *HealthCheck) any { return h.Path })},
		{Label: "healthCheck.status", JSON: "config.health_check.status", Kind: KindStatuses, Default: DefaultHealthStatus, Code: diagnostics.BadHealthCheck,
			Doc:     "Statuses that count as healthy.",
			Example: "200-299", set: setHealthStatus, get: inHealth(func(h *HealthCheck) any { return h.Status })},
		{Label: "healthCheck.timeout", JSON: "config.health_check.timeout", Kind: KindDuration, Default: DefaultHealthTimeout.String(), Code: diagnostics.BadHealthCheck,
			Doc:     "Timeout of one probe. A probe must end before the next is due: a timeout longer than the interval is shortened to the smaller of 2s and the interval (I004), and every view shows the shortened value.",
			Example: "2s", rw: healthDuration(func(h *HealthCheck) *time.Duration { return &h.Timeout })},
		{Label: "healthCheck.interval", JSON: "config.health_check.interval", Kind: KindDuration, Default: DefaultHealthInterval.String(), Code: diagnostics.BadHealthCheck,
			Doc:     "Time between probes of one backend.",
			Example: "5s", rw: healthDuration(func(h *HealthCheck) *time.Duration { return &h.Interval })},
		{Label: "healthCheck.rise", JSON: "config.health_check.rise", Kind: KindInt, Default: strconv.Itoa(DefaultHealthRise), Code: diagnostics.BadHealthCheck,
			Doc:     "Consecutive successful probes that mark a backend up (1-100).",
			Example: "2", rw: healthCount(func(h *HealthCheck) *int { return &h.Rise })},
		{Label: "healthCheck.fall", JSON: "config.health_check.fall", Kind: KindInt, Default: strconv.Itoa(DefaultHealthFall), Code: diagnostics.BadHealthCheck,
			Doc:     "Consecutive failed probes that mark a backend down (1-100).",
			Example: "3", rw: healthCount(func(h *HealthCheck) *int { return &h.Fall })},
		// Passive health.
		{Label: "passiveHealth.consecutiveFailures", JSON: "config.passive_health.consecutive_failures", Kind: KindInt, Default: strconv.Itoa(DefaultConsecutiveFailures), Code: diagnostics.BadPassiveHealth,
			Doc:     fmt.Sprintf("Failed attempts in a row (transport error, timeout, failure status) that eject a backend from the route's rotation (1-%d). Passive health is always on; a route whose backends are all ejected fails open (they are tried anyway).", MaxConsecutiveFailures),
			Example: "3", set: setPassiveFailures, get: inPassive(func(p *PassiveHealth) any { return p.ConsecutiveFailures })},
		{Label: "passiveHealth.ejectTime", JSON: "config.passive_health.eject_time", Kind: KindDuration, Default: DefaultEjectTime.String(), Code: diagnostics.BadPassiveHealth,
			Doc:     "Length of a first ejection; each ejection in a row doubles it, up to maxEjectTime. A backend that then stays good as long as its last ejection starts again from this.",
			Example: "30s", rw: passiveDuration(func(p *PassiveHealth) *time.Duration { return &p.EjectTime })},
		{Label: "passiveHealth.maxEjectTime", JSON: "config.passive_health.max_eject_time", Kind: KindDuration, Default: DefaultMaxEjectTime.String(), Code: diagnostics.BadPassiveHealth,
			Doc:     "Cap of the doubled ejection time; not below ejectTime (a smaller value falls back to the larger of 5m and ejectTime).",
			Example: "10m", rw: passiveDuration(func(p *PassiveHealth) *time.Duration { return &p.MaxEjectTime })},
		{Label: "passiveHealth.maxEjectedShare", JSON: "config.passive_health.max_ejected_share", Kind: KindFloat, Default: ratioText(DefaultMaxEjectedShare), Code: diagnostics.BadPassiveHealth,
			Doc:     "Largest share in (0,1] of the route's backends ejected at once; one backend may always be ejected. A failing backend over the share stays in rotation.",
			Example: "0.3", set: setPassiveShare, get: inPassive(func(p *PassiveHealth) any { return p.MaxEjectedShare })},
		// Circuit breaker.
		{Label: "circuitBreaker.enabled", JSON: "config.circuit_breaker.enabled", Kind: KindBool, Default: "true once any circuitBreaker.* field is set", Code: diagnostics.BadBool,
			Doc:     "Turns the breaker on with all defaults (`true`) or off although other circuitBreaker.* fields are set (`false`).",
			Example: "true", set: setBreakerEnabled, get: unwritten},
		{Label: "circuitBreaker.threshold", JSON: "config.circuit_breaker.threshold", Kind: KindFloat, Default: ratioText(cbDef.Threshold), Code: diagnostics.BadCircuitBreaker,
			Doc:     "Failure ratio in (0,1] over the window that opens the breaker.",
			Example: "0.5", rw: breakerParam(func(p *breaker.Params) *float64 { return &p.Threshold }, toFloat, errZeroRatio)},
		{Label: "circuitBreaker.minRequests", JSON: "config.circuit_breaker.min_requests", Kind: KindInt, Default: strconv.Itoa(cbDef.MinRequests), Code: diagnostics.BadCircuitBreaker,
			Doc:     "Outcomes the window must hold before the ratio counts (1-100000); the count window holds the last minRequests outcomes.",
			Example: "20", rw: breakerParam(func(p *breaker.Params) *int { return &p.MinRequests }, toInt, errZeroCount)},
		{Label: "circuitBreaker.window", JSON: "config.circuit_breaker.window", Kind: KindDuration, Default: "0s (count window)", Code: diagnostics.BadCircuitBreaker,
			Doc:     "0 = count-based window of the last minRequests outcomes; a duration (>= 1s) = rolling time window.",
			Example: "60s", rw: breakerParam(func(p *breaker.Params) *time.Duration { return &p.Window }, toDuration, nil)},
		{Label: "circuitBreaker.consecutiveFailures", JSON: "config.circuit_breaker.consecutive_failures", Kind: KindInt, Default: "0 (off)", Code: diagnostics.BadCircuitBreaker,
			Doc:     "Failures in a row that open the breaker; 0 turns the rule off.",
			Example: "5", rw: breakerParam(func(p *breaker.Params) *int { return &p.ConsecutiveFailures }, toInt, nil)},
		{Label: "circuitBreaker.slowCallDuration", JSON: "config.circuit_breaker.slow_call_duration", Kind: KindDuration, Default: "0s (off)", Code: diagnostics.BadCircuitBreaker,
			Doc:     "Calls slower than this count as slow; 0 turns the slow-call rule off.",
			Example: "2s", rw: breakerParam(func(p *breaker.Params) *time.Duration { return &p.SlowCallDuration }, toDuration, nil)},
		{Label: "circuitBreaker.slowCallThreshold", JSON: "config.circuit_breaker.slow_call_threshold", Kind: KindFloat, Default: "0 (off)", Code: diagnostics.BadCircuitBreaker,
			Doc:     "Slow-call ratio in (0,1] that opens the breaker; 0 turns the rule off.",
			Example: "0.8", rw: breakerParam(func(p *breaker.Params) *float64 { return &p.SlowCallThreshold }, toFloat, nil)},
		{Label: "circuitBreaker.cooldown", JSON: "config.circuit_breaker.cooldown", JSONAliases: []string{"config.circuit_breaker.cooldown_secs"}, Kind: KindDuration, Default: cbDef.Cooldown.String(), Code: diagnostics.BadCircuitBreaker,
			Doc:     "How long the breaker stays open before half-open probes (whole seconds or a Go duration). JSON also accepts `cooldown_secs`.",
			Example: "10", rw: breakerParam(func(p *breaker.Params) *time.Duration { return &p.Cooldown }, toDuration, errZeroDuration)},
		{Label: "circuitBreaker.maxCooldown", JSON: "config.circuit_breaker.max_cooldown", Kind: KindDuration, Default: "cooldown", Code: diagnostics.BadCircuitBreaker,
			Doc:     "With a value above cooldown, each consecutive trip doubles the open duration up to this cap.",
			Example: "5m", rw: breakerParam(func(p *breaker.Params) *time.Duration { return &p.MaxCooldown }, toDuration, nil)},
		{Label: "circuitBreaker.halfOpenProbes", JSON: "config.circuit_breaker.half_open_probes", Kind: KindInt, Default: strconv.Itoa(cbDef.HalfOpenProbes), Code: diagnostics.BadCircuitBreaker,
			Doc:     "Concurrent probe requests allowed while half-open (1-10000).",
			Example: "2", rw: breakerParam(func(p *breaker.Params) *int { return &p.HalfOpenProbes }, toInt, errZeroCount)},
		{Label: "circuitBreaker.successesToClose", JSON: "config.circuit_breaker.successes_to_close", Kind: KindInt, Default: strconv.Itoa(cbDef.SuccessesToClose), Code: diagnostics.BadCircuitBreaker,
			Doc:     "Consecutive successful probes that close the breaker.",
			Example: "3", rw: breakerParam(func(p *breaker.Params) *int { return &p.SuccessesToClose }, toInt, errZeroCount)},
		{Label: "circuitBreaker.probeTimeout", JSON: "config.circuit_breaker.probe_timeout", Kind: KindDuration, Default: "cooldown", Code: diagnostics.BadCircuitBreaker,
			Doc:     "A probe that has not reported after this frees its slot (hung backend, WebSocket).",
			Example: "30s", rw: breakerParam(func(p *breaker.Params) *time.Duration { return &p.ProbeTimeout }, toDuration, nil)},
		{Label: "circuitBreaker.failureStatuses", JSON: "config.circuit_breaker.failure_statuses", Kind: KindStatuses, Default: "500-599", Code: diagnostics.BadCircuitBreaker,
			Doc:     "Response statuses that count as failures (transport errors and timeouts always do).",
			Example: "500,502-504", rw: breakerParam(func(p *breaker.Params) *breaker.StatusSet { return &p.FailureStatuses }, toStatuses, nil)},
		{Label: "circuitBreaker.successStatuses", JSON: "config.circuit_breaker.success_statuses", Kind: KindStatuses, Default: "(unset: every non-failure status is a success)", Code: diagnostics.BadCircuitBreaker,
			Doc:     "If set, statuses in neither list are neutral (they neither trip nor heal).",
			Example: "2xx,3xx", rw: breakerParam(func(p *breaker.Params) *breaker.StatusSet { return &p.SuccessStatuses }, toStatuses, nil).omitEmpty()},
		{Label: "circuitBreaker.cooldownJitter", JSON: "config.circuit_breaker.cooldown_jitter", Kind: KindFloat, Default: "0", Code: diagnostics.BadCircuitBreaker,
			Doc:     "Random extra fraction [0,1] of the open duration, so replicas of Levee do not probe in lock-step.",
			Example: "0.1", rw: breakerParam(func(p *breaker.Params) *float64 { return &p.CooldownJitter }, toFloat, nil)},
		{Label: "circuitBreaker.recoveryDuration", JSON: "config.circuit_breaker.recovery_duration", Kind: KindDuration, Default: "0s (off)", Code: diagnostics.BadCircuitBreaker,
			Doc:     "After closing, traffic ramps up linearly over this duration; 0 turns the ramp off.",
			Example: "30s", rw: breakerParam(func(p *breaker.Params) *time.Duration { return &p.RecoveryDuration }, toDuration, nil)},
		{Label: "circuitBreaker.mode", JSON: "config.circuit_breaker.mode", Kind: KindEnum, Default: "enforce", Code: diagnostics.BadCircuitBreaker,
			Values:  []string{"enforce", "shadow"},
			Doc:     "`shadow` judges and emits events like `enforce` but never rejects: try thresholds on live traffic.",
			Example: "shadow", set: setBreakerMode, get: inBreaker(func(c *CircuitBreaker) any { return c.Params.Mode })},
		{Label: "circuitBreaker.responseCode", JSON: "config.circuit_breaker.response_code", Kind: KindInt, Default: strconv.Itoa(DefaultResponseCode), Code: diagnostics.BadCircuitBreaker,
			Doc:     "Status answered while the breaker is open (200-599).",
			Example: "503", set: setBreakerResponseCode, get: inBreaker(func(c *CircuitBreaker) any { return c.ResponseCode })},
		{Label: "circuitBreaker.responseBody", JSON: "config.circuit_breaker.response_body", Kind: KindString, Default: DefaultResponseBody, Code: diagnostics.BadCircuitBreaker,
			Doc:     "Body answered while the breaker is open (at most 4096 bytes).",
			Example: "try again later", set: setBreakerResponseBody, get: inBreaker(func(c *CircuitBreaker) any { return c.ResponseBody })},
		{Label: "circuitBreaker.scope", JSON: "config.circuit_breaker.scope", Kind: KindEnum, Default: ScopeRoute, Code: diagnostics.BadCircuitBreaker,
			Values:  []string{ScopeRoute, ScopeBackend},
			Doc:     "One breaker for the route, or one per backend.",
			Example: "backend", set: setBreakerScope, get: inBreaker(func(c *CircuitBreaker) any { return c.Scope })},
	}
}

func ratioText(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// The groups of the core rows in the payload (see group).
var (
	inHealth = group(func(ep *Entrypoint) *HealthCheck { return ep.HealthCheck })
	// The validator fills every passive-health field; an entrypoint built
	// without it leaves them zero, which is not a payload value, so the
	// group is left out and the request path's defaults apply.
	inPassive = group(func(ep *Entrypoint) *PassiveHealth {
		if ep.PassiveHealth.IsZero() {
			return nil
		}
		return &ep.PassiveHealth
	})
	inBreaker = group(func(ep *Entrypoint) *CircuitBreaker { return ep.CircuitBreaker })
)
