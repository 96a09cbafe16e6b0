package router

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/grpchealth"
)

// healthTarget is what a health checker checks: the route's current
// health-check config and backends. It is swapped as a whole on reload.
type healthTarget struct {
	cfg      config.HealthCheck
	backends []*Backend
	// tcp: the route is a TCP route, checked by a TCP connect instead of
	// an HTTP GET.
	tcp bool
	// grpc reaches the backends when cfg.GRPC; never for a TCP route.
	grpc *grpchealth.Probe
}

// healthChecker actively probes a route's backends and takes them out of
// rotation (BackendState.down) after Fall consecutive failed checks, and
// back after Rise consecutive good ones. One goroutine per route with
// checks; each round probes the backends concurrently.
type healthChecker struct {
	r      *Router
	route  string
	target atomic.Pointer[healthTarget]
	client *http.Client
	kick   chan struct{}
	stop   chan struct{}
	done   chan struct{}
}

// configureHealth starts, updates or stops a route's active checks.
func (r *Router) configureHealth(rs *RouteState, rt *Route) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rt.ep.HealthCheck == nil || len(rt.backends) == 0 {
		if rs.health != nil {
			rs.health.close()
			rs.health = nil
			for _, b := range rt.backends {
				b.st.down.Store(false)
			}
		}
		return
	}
	// The validator already applied Effective's rules (and said so, I004);
	// they are applied again for entrypoints built without it.
	t := &healthTarget{cfg: rt.ep.HealthCheck.Effective(), backends: rt.backends, tcp: rt.ep.Protocol == config.ProtocolTCP}
	if t.cfg.GRPC && !t.tcp {
		t.grpc = grpchealth.NewProbe(r.grpcHealth, config.SpeaksTLS(rt.ep.Scheme), rt.backendTLS, rt.backendTLSErr)
	}
	if rs.health != nil {
		rs.health.target.Store(t)
		select {
		case rs.health.kick <- struct{}{}:
		default:
		}
		return
	}
	h := &healthChecker{
		r: r, route: rs.id,
		client: &http.Client{
			Transport: r.healthTransport,
			// A redirect is an answer: judge its status, do not follow it.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	h.target.Store(t)
	rs.health = h
	go h.run()
}

// stopHealth stops the route's checker, if any.
func (rs *RouteState) stopHealth() {
	rs.mu.Lock()
	h := rs.health
	rs.health = nil
	rs.mu.Unlock()
	if h != nil {
		h.close()
	}
}

func (h *healthChecker) close() {
	close(h.stop)
	<-h.done
}

func (h *healthChecker) run() {
	defer close(h.done)
	interval := h.target.Load().cfg.Interval
	timer := time.NewTimer(0) // first round at once: a new route learns its health fast
	defer timer.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.kick:
			if iv := h.target.Load().cfg.Interval; iv != interval {
				interval = iv
				timer.Reset(interval)
			}
			continue
		case <-timer.C:
		}
		h.round()
		interval = h.target.Load().cfg.Interval
		timer.Reset(interval)
	}
}

// round checks every backend once, concurrently, and waits for all.
func (h *healthChecker) round() {
	t := h.target.Load()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	seen := make(map[*BackendState]bool, len(t.backends))
	for _, b := range t.backends {
		if seen[b.st] {
			continue
		}
		seen[b.st] = true
		wg.Go(func() {
			if t.tcp {
				h.judge(b, t.cfg, connectCheck(ctx, b, t.cfg))
				return
			}
			h.judge(b, t.cfg, h.check(ctx, b, t))
		})
	}
	wg.Wait()
}

func (h *healthChecker) check(ctx context.Context, b *Backend, t *healthTarget) bool {
	cfg := t.cfg
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	if t.grpc != nil {
		err := t.grpc.Check(ctx, b.hostport, cfg.GRPCService, cfg.Timeout)
		if err != nil {
			h.r.log.Debug().Str("route", h.route).Str("backend", b.hostport).Err(err).Msg("gRPC health check failed")
		}
		return err == nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+b.hostport+cfg.Path, nil)
	if err != nil {
		return false
	}
	req.Header.Set("User-Agent", "levee-health-check")
	resp, err := h.client.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if cfg.Status.IsEmpty() {
		return resp.StatusCode >= 200 && resp.StatusCode < 400
	}
	return cfg.Status.Has(resp.StatusCode)
}

// connectCheck is a TCP route's check: the backend accepts a TCP
// connection within the timeout.
func connectCheck(ctx context.Context, b *Backend, cfg config.HealthCheck) bool {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", b.hostport)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// judge applies rise/fall. Only this checker's goroutines touch the
// counters, one per backend per round.
func (h *healthChecker) judge(b *Backend, cfg config.HealthCheck, ok bool) {
	st := b.st
	if ok {
		st.hcFail = 0
		st.hcOK++
		if st.down.Load() && st.hcOK >= cfg.Rise {
			st.down.Store(false)
			h.r.log.Info().Str("event", "backend_up").Str("route", h.route).Str("backend", b.hostport).
				Int("rise", cfg.Rise).Msg("health check passing: backend back in rotation")
		}
		return
	}
	st.hcOK = 0
	st.hcFail++
	if !st.down.Load() && st.hcFail >= cfg.Fall {
		st.down.Store(true)
		h.r.log.Warn().Str("event", "backend_down").Str("route", h.route).Str("backend", b.hostport).
			Int("fall", cfg.Fall).Str("path", healthProbeName(cfg)).Msg("health check failing: backend out of rotation")
	}
}

// healthProbeName names what a check asks for, for the log.
func healthProbeName(cfg config.HealthCheck) string {
	if cfg.GRPC {
		return grpchealth.Path + " " + cfg.GRPCService
	}
	return cfg.Path
}

// maxHealthHeaderBytes bounds a health check answer's head: a probe reads
// only its status, and a backend must not make the prober buffer more.
const maxHealthHeaderBytes = 64 << 10

// newHealthTransport returns the net/http transport active health checks
// use: never through HTTP_PROXY, no compression, bounded dial.
func newHealthTransport(o Options) *http.Transport {
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                  nil, // never route backend traffic through HTTP_PROXY
		DialContext:            d.DialContext,
		MaxIdleConns:           0, // bounded per host instead
		MaxIdleConnsPerHost:    o.MaxIdleConnsPerHost,
		IdleConnTimeout:        o.IdleConnTimeout,
		MaxResponseHeaderBytes: maxHealthHeaderBytes,
		ExpectContinueTimeout:  time.Second,
		DisableCompression:     true,
		WriteBufferSize:        32 << 10,
		ReadBufferSize:         32 << 10,
	}
}
