package proxy

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/httpx/h3"
	"github.com/levee-proxy/levee/router/httpx/pathform"
)

// Snapshots is where the handler reads the route table: *router.Router.
type Snapshots interface {
	// Snapshot returns the route table requests use now.
	Snapshot() *router.Snapshot
}

// Attacher is what a Snapshots may also offer (*router.Router does): a
// factory for per-route data that lives and dies with the route's state.
// With it, a route's request series exist (at zero) from the moment the
// route does; without it they are made on the route's first request.
type Attacher interface {
	SetAttachment(create func(route string) router.Attachment)
}

// Handler is the request path: an http.Handler that proxies each request
// over the current snapshot of src.
type Handler struct {
	src     Snapshots
	opts    Options
	log     zerolog.Logger
	clock   router.Clock
	metrics *metrics

	transports transports
	buffers    sync.Pool // *[]byte, for copying bodies
	lines      sync.Pool // *[]byte, for formatting access lines
	accessLog  zerolog.Logger
	retryAfter [][]string
	sticky     *stickyKey
	// early reports whether a request arrived in 0-RTT early data, and
	// the channel closed when its handshake completes: h3.Early (tests
	// put a handshake of their own in its place).
	early func(*http.Request) (<-chan struct{}, bool)
}

// New returns a Handler that serves requests over src's snapshots. Call
// Close to close its backend connections.
func New(src Snapshots, opts Options) *Handler {
	opts = opts.withDefaults()
	p := &Handler{src: src, opts: opts, log: opts.Logger, clock: opts.Clock, metrics: newMetrics(opts.RouteLatency)}
	p.buffers.New = func() any { b := make([]byte, 32<<10); return &b }
	p.sticky = newStickyKey(opts.StickySecret)
	p.early = h3.Early
	p.lines.New = func() any { b := make([]byte, 0, 512); return &b }
	p.accessLog = p.log
	if opts.AccessLogOut != nil {
		p.accessLog = p.log.Output(opts.AccessLogOut).Level(zerolog.InfoLevel)
	}
	p.retryAfter = make([][]string, 601)
	for i := range p.retryAfter {
		p.retryAfter[i] = []string{strconv.Itoa(i)}
	}
	p.transports.init(opts)
	if err := p.metrics.register(opts.Registerer); err != nil {
		p.log.Error().Err(err).Msg("request metrics are not exported")
	}
	if a, ok := src.(Attacher); ok {
		a.SetAttachment(p.metrics.newSeries)
	}
	return p
}

// Close stops the backend clients' reapers and closes idle backend
// connections. The handler still answers requests afterwards.
func (p *Handler) Close() { p.transports.close() }

// ServeHTTP routes and proxies one request.
func (p *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	x := &exchange{p: p, w: w, req: req, uri: req.RequestURI, start: time.Now()}
	defer x.closeBody()
	x.initDeadlines()
	if p.opts.Tracer != nil {
		x.startSpan()
	}
	if req.Method == http.MethodConnect {
		// An edge reverse proxy is not a forward proxy: no tunnels.
		w.Header()["Allow"] = valueAllow
		x.reply(http.StatusMethodNotAllowed, DiagnosticNoRoute, "CONNECT is not supported\n")
		p.finish(x)
		return
	}
	// The path is normalised once, here: matching, the policies and the
	// backend all see the same form (router/httpx/pathform).
	n := len(req.URL.Path)
	if f := pathform.Normalize(req.URL, p.opts.StrictPaths); f != pathform.None {
		x.reply(http.StatusBadRequest, DiagnosticBadPath, string(f))
		p.finish(x)
		return
	}
	if len(req.URL.Path) != n {
		req.RequestURI = req.URL.RequestURI()
	}
	if !x.screenHeaders() {
		p.finish(x)
		return
	}
	// The listener (set by cmd/levee in the server's base context)
	// chooses among plain and TLS routes; without one every route is a
	// candidate.
	l := router.ListenerOf(req.Context())
	route, redirect := p.src.Snapshot().MatchOn(l, req.Method, req.Host, req.URL.Path)
	x.route = route
	if route != nil {
		x.span.Route(route.Config().ID)
	}
	switch {
	case route == nil:
		x.reply(http.StatusNotFound, DiagnosticNoRoute, "no route for this host and path\n")
	case !x.admitEarly(route.Config().EarlyData):
		x.abort = true // the client's connection is gone
	case redirect:
		x.redirectHTTPS(l)
	case !route.Policies().Empty():
		x.setHSTS()
		x.noteStaleCredentials()
		x.servePolicies(route.Policies())
	default:
		x.setHSTS()
		x.serve()
	}
	p.finish(x)
	if x.abort {
		// The response is already under way and the backend broke it:
		// make the client see a truncated response, not a complete one.
		panic(http.ErrAbortHandler)
	}
}

// series returns the metric handles of the exchange's route.
func (x *exchange) series() *routeSeries { return x.p.seriesOf(x.route) }

// retryAfterValue returns a shared header value for n seconds, so that a
// rejection does not allocate for the common values.
func (p *Handler) retryAfterValue(n int) []string {
	if n < len(p.retryAfter) {
		return p.retryAfter[n]
	}
	return []string{strconv.Itoa(n)}
}
