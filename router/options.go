package router

import (
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/basicauth"
	"github.com/levee-proxy/levee/router/policy/compress"
	"github.com/levee-proxy/levee/router/policy/inflight"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

// Clock tells the time. Breakers, ejection and grace periods read it, so
// tests can drive them without sleeping. The request path (package proxy)
// must be given the same clock as the router.
type Clock interface{ Now() time.Time }

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Options are the Router's collaborators and tunables. Zero values mean
// the documented defaults. The request path's tunables are proxy.Options.
type Options struct {
	// Logger receives breaker transitions, route and diagnostic changes
	// and health changes.
	Logger zerolog.Logger
	// Registerer receives the router's metrics; nil keeps them in a
	// private registry (nothing global is touched).
	Registerer prometheus.Registerer
	// Clock drives breakers and grace periods; nil = real time.
	Clock Clock
	// Diagnostics is the shared diagnostics store; nil = a private one.
	Diagnostics *diagnostics.Store

	// DialTimeout bounds an active health check's connect (default DefaultDialTimeout, 1s).
	DialTimeout time.Duration
	// IdleConnTimeout closes health checks' pooled connections idle this
	// long (default 90s).
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost is the health checks' keep-alive pool size per
	// backend (default 256).
	MaxIdleConnsPerHost int

	// BreakerStore shares breakers across replicas (breaker/fleet); nil
	// keeps every breaker local.
	BreakerStore BreakerStore

	// RemovedRouteGrace is how long the state of a removed route (and of a
	// removed backend address) is kept, and how long a route that vanished
	// from a non-API source keeps answering 503 no-healthy-backend before
	// it 404s (default 30s).
	RemovedRouteGrace time.Duration

	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// (levee serve --trusted-proxies): the IP allow-list and the rate and
	// in-flight limits keyed by client address apply the same rule as the
	// proxy's X-Forwarded-For (router/policy.ClientIP).
	TrustedProxies []netip.Prefix
	// Encoders are the compression encoders every route's compress
	// policy shares, under one memory budget (levee serve
	// --compress-memory); nil: a set of the router's own with
	// compress.DefaultBudget.
	Encoders *compress.Encoders
	// HistoryInterval is how often RunHistory samples every breaker's
	// counters (default 5s); HistorySamples is how many samples each
	// breaker keeps (default 60: five minutes at the default interval).
	HistoryInterval time.Duration
	HistorySamples  int

	// PasswordSlots bound the basic-auth password checks (bcrypt) under
	// way at once over every route, so that wrong passwords on one route
	// cannot take the cores from the others; nil = basicauth.NewSlots(0,
	// 0): half the cores, a 1s wait.
	PasswordSlots *basicauth.Slots

	// RateFleet reconciles the rate limits with rateLimit.scope=fleet
	// through the breaker store; nil: those limits are local (W068).
	RateFleet *ratelimit.Fleet
	// InFlightFleet reconciles the in-flight limits with
	// inFlight.scope=fleet through the breaker store; nil: those limits
	// are local (W068).
	InFlightFleet *inflight.Fleet
	// ErrorPagesDir is the only directory error-page files (errors.file)
	// are read from (--error-pages-dir); none: page files are off (W088).
	ErrorPagesDir string

	// Policies are the kinds of policy a route compiles, in order
	// (DefaultPolicies); nil: DefaultPolicies with the router's own
	// forward-auth pool, PasswordSlots and Encoders.
	Policies []policy.Kind
}

// Defaults of the backend connection settings, shared by the router's
// health checks and the request path's clients (router/proxy).
const (
	// DefaultDialTimeout is short: backends are containers on a local
	// bridge network (or hosts on the LAN), where a connect either
	// completes or is refused within milliseconds, or never completes (a
	// dead address). Waiting seconds for the latter only delays the retry
	// on another replica and the 503 when there is none.
	DefaultDialTimeout         = 1 * time.Second
	DefaultIdleConnTimeout     = 90 * time.Second
	DefaultMaxIdleConnsPerHost = 256
)

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Diagnostics == nil {
		o.Diagnostics = diagnostics.NewStore()
	}
	if o.Encoders == nil {
		o.Encoders = compress.NewEncoders(compress.DefaultBudget)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = DefaultIdleConnTimeout
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if o.HistoryInterval <= 0 {
		o.HistoryInterval = DefaultHistoryInterval
	}
	if o.HistorySamples <= 0 {
		o.HistorySamples = DefaultHistorySamples
	}
	if o.PasswordSlots == nil {
		o.PasswordSlots = basicauth.NewSlots(0, 0)
	}
	if o.RemovedRouteGrace <= 0 {
		o.RemovedRouteGrace = 30 * time.Second
	}
	return o
}
