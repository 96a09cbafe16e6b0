package router

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// healthTarget is what a health checker checks: the route's current
// health-check config and backends. It is swapped as a whole on reload.
type healthTarget struct {
	cfg      config.HealthCheck
	backends []*backend
}

// healthChecker actively probes a route's backends and takes them out of
// rotation (backendState.down) after Fall consecutive failed checks, and
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
func (r *Router) configureHealth(rs *routeState, rt *Route) {
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
	t := &healthTarget{cfg: *rt.ep.HealthCheck, backends: rt.backends}
	if t.cfg.Interval <= 0 {
		t.cfg.Interval = 10 * time.Second
	}
	if t.cfg.Timeout <= 0 || t.cfg.Timeout > t.cfg.Interval {
		t.cfg.Timeout = min(2*time.Second, t.cfg.Interval)
	}
	t.cfg.Rise = max(t.cfg.Rise, 1)
	t.cfg.Fall = max(t.cfg.Fall, 1)
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
			Transport: r.transports.standard(0),
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
func (rs *routeState) stopHealth() {
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
	seen := make(map[*backendState]bool, len(t.backends))
	for _, b := range t.backends {
		if seen[b.st] {
			continue
		}
		seen[b.st] = true
		wg.Go(func() { h.judge(b, t.cfg, h.check(ctx, b, t.cfg)) })
	}
	wg.Wait()
}

func (h *healthChecker) check(ctx context.Context, b *backend, cfg config.HealthCheck) bool {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
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

// judge applies rise/fall. Only this checker's goroutines touch the
// counters, one per backend per round.
func (h *healthChecker) judge(b *backend, cfg config.HealthCheck, ok bool) {
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
			Int("fall", cfg.Fall).Str("path", cfg.Path).Msg("health check failing: backend out of rotation")
	}
}

// passive feeds one attempt's result to passive ejection: EjectAfter
// consecutive failures eject the backend for EjectTime·2^n (n = ejections
// in a row, capped at EjectMaxTime), unless that would eject more than
// EjectMaxShare of the route's backends. Ejection never touches breakers.
func (r *Router) passive(rt *Route, b *backend, failed bool, now int64) {
	st := b.st
	if !failed {
		if st.failures.Load() != 0 {
			st.failures.Store(0)
		}
		// A backend that stays good for as long as it was last ejected
		// starts its backoff from scratch.
		if st.ejectionRun.Load() != 0 {
			if u := st.ejectedUntil.Load(); now > u+st.lastEjection.Load() {
				st.ejectionRun.Store(0)
			}
		}
		return
	}
	if r.opts.EjectAfter < 0 || int(st.failures.Add(1)) < r.opts.EjectAfter {
		return
	}
	rs := rt.state
	rs.ejectMu.Lock()
	defer rs.ejectMu.Unlock()
	if st.ejected(now) {
		return
	}
	ejected := 0
	for _, o := range rt.backends {
		if o.st != st && o.st.ejected(now) {
			ejected++
		}
	}
	limit := max(1, int(r.opts.EjectMaxShare*float64(len(rt.backends))))
	if ejected+1 > limit {
		return
	}
	n := st.ejectionRun.Load()
	d := r.opts.EjectTime
	for i := int32(0); i < n && d < r.opts.EjectMaxTime; i++ {
		d *= 2
	}
	d = min(d, r.opts.EjectMaxTime)
	st.ejectedUntil.Store(now + int64(d))
	st.lastEjection.Store(int64(d))
	st.ejectionRun.Add(1)
	st.failures.Store(0)
	r.log.Warn().Str("event", "backend_ejected").Str("route", rt.ep.ID).Str("backend", b.hostport).
		Int("after_failures", r.opts.EjectAfter).Dur("for", d).Int32("ejections_in_a_row", n+1).
		Msg("backend ejected after consecutive failures")
}
