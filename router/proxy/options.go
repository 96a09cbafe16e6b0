package proxy

import (
	"crypto/rand"
	"io"
	"net/netip"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/proxy/trace"
)

// Options are the request path's collaborators and tunables. Zero values
// mean the documented defaults.
type Options struct {
	// Tracer starts each request's spans (router/proxy/trace); nil is
	// tracing off, and the request path pays a nil check for it.
	Tracer *trace.Tracer
	// Logger receives passive ejections and (when AccessLog is set) one
	// line per request.
	Logger zerolog.Logger
	// Registerer receives the request path's metrics; nil keeps them in a
	// private registry (nothing global is touched).
	Registerer prometheus.Registerer
	// Clock drives ejection and the retry budget; nil = real time. Give
	// it the router's clock: ejection deadlines are read by both.
	Clock router.Clock
	// AccessLog logs one line per request (that AccessLogFilter keeps).
	AccessLog bool
	// AccessLogFormat is the lines' format (default AccessLogJSON).
	AccessLogFormat AccessLogFormat
	// AccessLogOut receives the access lines, one Write per line. Nil
	// sends JSON lines through Logger (and its level); given, JSON lines
	// carry Logger's fields but are written whatever its level. Common
	// and Combined lines need it (without it they are JSON through
	// Logger).
	AccessLogOut io.Writer
	// AccessLogFilter keeps only some lines; the zero value keeps all.
	AccessLogFilter AccessLogFilter
	// RouteLatency gives every route its own
	// levee_request_duration_seconds histogram (17 series each) instead of
	// one histogram for all routes.
	RouteLatency bool
	// TrustedProxies are the peers (load balancers in front of Levee)
	// whose forwarding headers (Forwarded, X-Real-Ip, Front-End-Https and
	// every X-Forwarded-*) are kept, X-Forwarded-For appended to. From
	// every other peer they are removed before any policy runs, and
	// X-Forwarded-For, -Proto and -Host set from what Levee saw.
	TrustedProxies []netip.Prefix
	// StrictPaths refuses (400 bad-path) a request path that is not
	// already in normal form (a run of slashes, a ";" parameter) instead
	// of normalising it: never rewrites a path, so a backend sees the
	// client's own bytes or nothing.
	StrictPaths bool
	// UnderscoreHeaders is what becomes of request fields whose name has
	// an underscore (default UnderscoreDelete). Whatever it says, the
	// underscore spellings of the fields Levee owns are removed.
	UnderscoreHeaders UnderscoreHeaders

	// DialTimeout bounds connecting to a backend (default
	// router.DefaultDialTimeout, 1s). A connect that fails or times out
	// never reached the backend: the request goes to another backend.
	DialTimeout time.Duration
	// IdleConnTimeout closes pooled backend connections idle this long
	// (default 90s).
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost is the keep-alive pool size per backend
	// (default 256).
	MaxIdleConnsPerHost int
	// StandardTransport sends backend requests through net/http.Transport
	// instead of Levee's lean HTTP/1.1 client (router/httpx/client): slower,
	// kept as a fallback.
	StandardTransport bool
	// PlainSocketIO makes Levee's backend client read and write through
	// net.Conn instead of raw system calls (sockio.Socket); for
	// measurement.
	PlainSocketIO bool

	// RequestBodyTimeout is the longest wait for the next bytes of a
	// client's request body (default 30s); a client that stalls longer is
	// answered 408 and never counts against the backend.
	RequestBodyTimeout time.Duration
	// RequestBodyMinRate, when positive, is the average rate in bytes per
	// second that a request body must keep once RequestBodyTimeout has
	// passed since it started (a client trickling a byte just inside every
	// timeout would otherwise hold its connection for ever).
	RequestBodyMinRate int
	// ResponseWriteTimeout is the longest wait for a client to take the
	// next bytes of a response (default 60s); then the connection closes.
	ResponseWriteTimeout time.Duration
	// BackendBodyTimeout is the longest wait for the next bytes of a
	// backend's response body (default 60s); then the response is cut
	// short and the backend connection closed.
	BackendBodyTimeout time.Duration
	// TunnelIdleTimeout closes an upgraded connection (WebSocket) on which
	// no byte moved in either direction for this long (default 5m).
	TunnelIdleTimeout time.Duration
	// UpgradeProtocols are the protocols a client may switch to through
	// the proxy (Upgrade header, lower case; default websocket). A request
	// to upgrade to anything else is forwarded as a plain request.
	UpgradeProtocols []string

	// Passive ejection is set per route (config.PassiveHealth, which the
	// validator always fills); these are the values for a route field left
	// zero, i.e. an entrypoint built without the validator, and default to
	// the validator's defaults. EjectAfter consecutive failures eject a
	// backend (default 5; negative turns passive ejection off for every
	// route). EjectTime is the first ejection's length, doubled on each
	// consecutive ejection (default 10s) up to EjectMaxTime (default 5m).
	// EjectMaxShare caps the share of a route's backends ejected at once
	// (default 0.5; at least one backend may always be ejected).
	EjectAfter    int
	EjectTime     time.Duration
	EjectMaxTime  time.Duration
	EjectMaxShare float64

	// RetryBudget is the share of extra attempts allowed over
	// RetryBudgetWindow (default 0.2), with at least RetryBudgetMin
	// retries per window (default 10) so that quiet routes can retry.
	RetryBudget       float64
	RetryBudgetWindow time.Duration
	RetryBudgetMin    int

	// StickySecret keys the sticky cookie's backend ids (HMAC-SHA256,
	// pick_sticky.go); empty: a random secret of the process. Replicas
	// whose cookies must agree are given the same.
	StickySecret []byte

	// Stale holds the bounds of each route's stale-answer cache
	// (circuitBreaker.serveStale, stale.go); zero fields take the
	// defaults.
	Stale StaleLimits
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = router.RealClock{}
	}
	if o.AccessLogOut == nil {
		o.AccessLogFormat = AccessLogJSON
	}
	o.Stale = o.Stale.withDefaults()
	if len(o.StickySecret) == 0 {
		o.StickySecret = make([]byte, 32)
		rand.Read(o.StickySecret) // never fails (crypto/rand)
	}
	if o.Registerer == nil {
		o.Registerer = prometheus.NewRegistry()
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = router.DefaultDialTimeout
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = router.DefaultIdleConnTimeout
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = router.DefaultMaxIdleConnsPerHost
	}
	if o.RequestBodyTimeout <= 0 {
		o.RequestBodyTimeout = 30 * time.Second
	}
	if o.ResponseWriteTimeout <= 0 {
		o.ResponseWriteTimeout = 60 * time.Second
	}
	if o.BackendBodyTimeout <= 0 {
		o.BackendBodyTimeout = 60 * time.Second
	}
	if o.TunnelIdleTimeout <= 0 {
		o.TunnelIdleTimeout = 5 * time.Minute
	}
	if o.UpgradeProtocols == nil {
		o.UpgradeProtocols = []string{"websocket"}
	}
	if o.EjectAfter == 0 {
		o.EjectAfter = config.DefaultConsecutiveFailures
	}
	if o.EjectTime <= 0 {
		o.EjectTime = config.DefaultEjectTime
	}
	if o.EjectMaxTime < o.EjectTime {
		o.EjectMaxTime = max(config.DefaultMaxEjectTime, o.EjectTime)
	}
	if o.EjectMaxShare <= 0 || o.EjectMaxShare > 1 {
		o.EjectMaxShare = config.DefaultMaxEjectedShare
	}
	if o.RetryBudget <= 0 {
		o.RetryBudget = 0.2
	}
	if o.RetryBudgetWindow <= 0 {
		o.RetryBudgetWindow = 10 * time.Second
	}
	if o.RetryBudgetMin <= 0 {
		o.RetryBudgetMin = 10
	}
	return o
}
