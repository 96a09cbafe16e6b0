package config

import (
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
)

// Protocol names. Only HTTP is routed today.
const ProtocolHTTP = "http"

// Source names of the built-in providers.
const (
	SourceDocker = "docker"
	SourceAPI    = "api"
	// SourceSwarm is the Docker provider in Swarm mode (services, not
	// containers); its entrypoint IDs end in "@swarm".
	SourceSwarm = "swarm"
	// SourceFile is the file provider (--config-dir, --config-file); its
	// entrypoint IDs end in "@file".
	SourceFile = "file"
	// SourceKubernetes is the Kubernetes provider (--kubernetes); its
	// entrypoint IDs end in "@kubernetes".
	SourceKubernetes = "kubernetes"
)

// Load-balancing policies.
const (
	RoundRobin       = "round_robin"
	Random           = "random"
	PowerOfTwo       = "power_of_two"
	LeastConnections = "least_connections"
)

// Breaker scopes.
const (
	ScopeRoute   = "route"
	ScopeBackend = "backend"
)

// Entrypoint is one routed service: which requests it matches and where they
// go. Every source (labels, API) produces Entrypoints that have already been
// normalised by the one validator, so the router can trust every field.
type Entrypoint struct {
	// ID is unique across all sources and stable across reloads: state
	// (breakers, balancer, health) is kept by it.
	ID string `json:"id"`
	// Name is the service name as the operator wrote it.
	Name string `json:"name"`
	// Source is the provider that owns this entrypoint (SourceDocker, SourceSwarm, SourceFile, SourceKubernetes, SourceAPI).
	Source   string `json:"source"`
	Protocol string `json:"protocol"`
	// Hosts are lower-case host names without port; "*.example.com" matches
	// any sub-domain of example.com (not example.com itself).
	Hosts []string `json:"hostnames"`
	// Path is a segment-aware path prefix; "/" matches everything.
	Path string `json:"path"`
	// PathCaseInsensitive matches Path as a case-insensitive backend
	// (IIS, ASP.NET on Windows) reads it: without regard to case and to
	// the dots and spaces that end a segment; PathRegex then sees the
	// folded path.
	PathCaseInsensitive bool `json:"path_case_insensitive,omitempty"`
	// PathRegex, if set, must also match the request path.
	PathRegex string `json:"path_regex,omitempty"`
	// Priority breaks ties between routes with the same host and path
	// length; higher wins.
	Priority int `json:"priority"`
	// Methods, if set, restricts the route to these (upper-case) methods.
	Methods []string `json:"methods,omitempty"`
	// StripPrefix removes Path from the request path before forwarding.
	StripPrefix bool `json:"strip_prefix,omitempty"`
	// EarlyData: a safe request that arrived in HTTP/3 0-RTT is forwarded
	// before the handshake completes (RFC 8470); otherwise it waits.
	EarlyData bool `json:"early_data,omitempty"`
	// AddPrefix is prepended to the (possibly stripped) path before forwarding.
	AddPrefix string `json:"add_prefix,omitempty"`

	Backends []Backend `json:"backends"`

	LoadBalancer   string        `json:"load_balancer"`
	BackendTimeout time.Duration `json:"backend_timeout"`
	Retry          Retry         `json:"retry"`
	// MaxRequestBodyBytes bounds the request body; a larger one is
	// answered 413. Zero means no limit.
	MaxRequestBodyBytes int64           `json:"max_request_body_bytes,omitempty"`
	HealthCheck         *HealthCheck    `json:"health_check,omitempty"`
	PassiveHealth       PassiveHealth   `json:"passive_health"`
	CircuitBreaker      *CircuitBreaker `json:"circuit_breaker,omitempty"`
	// Access are the policies that admit or refuse a request
	// (model_access.go).
	Access AccessPolicies `json:"access"`
	// Transform holds the policies that change a request or its response,
	// and sticky sessions (model_transform.go).
	Transform Transform `json:"transform"`
	// Policies are the names of the named policies the route uses, in
	// order (model_policies.go); the router resolves them into Access,
	// Transform and MaxRequestBodyBytes when it builds a snapshot.
	Policies []string `json:"policies,omitempty"`

	// TLS says whether the route is served over HTTPS (model_tls.go).
	TLS TLS `json:"tls"`
	// Listeners, if set, are the names of the listeners the route serves
	// on; empty means every listener of its kind (plain or TLS).
	Listeners []string `json:"listeners,omitempty"`
	// Scheme is how the backends are spoken to: SchemeHTTP (also "") or
	// SchemeHTTPS, with BackendTLS (fields_backendtls.go).
	Scheme     string     `json:"scheme,omitempty"`
	BackendTLS BackendTLS `json:"backend_tls"`
	// TCP holds the settings of a TCP route (Protocol == ProtocolTCP,
	// model_tcp.go).
	TCP TCP `json:"tcp"`
	// UDP holds the settings of a UDP route (Protocol == ProtocolUDP,
	// model_udp.go).
	UDP UDP `json:"udp"`

	// Created orders entrypoints deterministically when two collide: the
	// oldest wins (container creation time, API creation time).
	Created time.Time `json:"created"`
}

// Backend is one upstream server of an entrypoint.
type Backend struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	// Weight is relative; 0 means wired but never picked.
	Weight int `json:"weight"`
	// Name is a display name, e.g. the container name.
	Name string `json:"name,omitempty"`
	// Host names the Docker host the backend runs on when Levee watches
	// several (display only: Address and Port identify the backend).
	Host string `json:"host,omitempty"`
}

// Retry configures request retries.
type Retry struct {
	// Attempts is the total number of tries, >= 1.
	Attempts int `json:"attempts"`
	// BodyBuffer is the largest request body read into memory so that a
	// retry can send it again; zero means DefaultRetryBodyBuffer.
	BodyBuffer int64 `json:"body_buffer,omitempty"`
}

// HealthCheck configures active health checks of a route's backends.
type HealthCheck struct {
	Path     string            `json:"path"`
	Status   breaker.StatusSet `json:"-"`
	Timeout  time.Duration     `json:"timeout"`
	Interval time.Duration     `json:"interval"`
	// Rise and Fall are the consecutive results that mark a backend up or down.
	Rise int `json:"rise"`
	Fall int `json:"fall"`
	// GRPC probes with the gRPC health protocol (grpc.health.v1.Health/
	// Check) for GRPCService instead of GET Path (fields_grpc.go).
	GRPC        bool   `json:"grpc,omitempty"`
	GRPCService string `json:"grpc_service,omitempty"`
}

// Effective returns the health check as the prober runs it. A probe must
// end before the next one is due, so a timeout longer than the interval is
// shortened to min(2s, interval); the validator applies this rule and says
// so (I004), and the router applies it again for entrypoints built without
// the validator. Non-positive fields take their defaults.
func (h HealthCheck) Effective() HealthCheck {
	if h.Interval <= 0 {
		h.Interval = DefaultHealthInterval
	}
	if h.Timeout <= 0 || h.Timeout > h.Interval {
		h.Timeout = min(2*time.Second, h.Interval)
	}
	h.Rise = max(h.Rise, 1)
	h.Fall = max(h.Fall, 1)
	return h
}

// PassiveHealth configures passive ejection: the request path ejects a
// backend after ConsecutiveFailures failed attempts in a row, for EjectTime
// doubled on each ejection in a row up to MaxEjectTime, unless that would
// hold out more than MaxEjectedShare of the route's backends (one may
// always be). A route whose backends are all ejected fails open. The
// validator fills every field; a zero field (an entrypoint built without
// it) takes the request path's default.
type PassiveHealth struct {
	ConsecutiveFailures int           `json:"consecutive_failures"`
	EjectTime           time.Duration `json:"eject_time"`
	MaxEjectTime        time.Duration `json:"max_eject_time"`
	MaxEjectedShare     float64       `json:"max_ejected_share"`
}

// IsZero reports whether no field is set.
func (p PassiveHealth) IsZero() bool { return p == PassiveHealth{} }

// CircuitBreaker configures the breaker that guards a route.
type CircuitBreaker struct {
	Params       breaker.Params `json:"-"`
	ResponseCode int            `json:"response_code"`
	ResponseBody string         `json:"response_body"`
	Scope        string         `json:"scope"`
	// Fallback is what the route answers while the breaker is open
	// (model_fallback.go).
	Fallback Fallback `json:"fallback"`
	// GRPCFailureStatuses are the grpc-status values that fail a gRPC
	// call (fields_grpc.go).
	GRPCFailureStatuses GRPCCodes `json:"grpc_failure_statuses"`
}

// SourceUpdate is the complete current output of one provider.
type SourceUpdate struct {
	Source      string
	Entrypoints []Entrypoint
	Diagnostics []diagnostics.Diagnostic
	// Policies are the source's complete current set of named policies,
	// which routes of any source may reference.
	Policies []Policy
}

// SourcePatch changes part of one source's entrypoints, by id: Put adds
// or replaces entrypoints, Delete removes ids. Diagnostics is the source's
// complete current list, as in SourceUpdate. A source that patches must
// not list one id twice.
type SourcePatch struct {
	Source      string
	Put         []Entrypoint
	Delete      []string
	Diagnostics []diagnostics.Diagnostic
}
