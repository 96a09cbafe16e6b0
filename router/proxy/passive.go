package proxy

import "github.com/levee-proxy/levee/router"

// Passive health: the request path judges every attempt (see outcome and
// classify for what counts as a failure) and ejects a backend from the
// route's rotation after consecutive failures. The record lives in the
// router's backend state (router.EjectionState), so that it outlives
// snapshots and shows in the status views; only this file writes it.

// passive feeds one attempt's result to passive ejection: EjectAfter
// consecutive failures eject the backend for EjectTime·2^n (n = ejections
// in a row, capped at EjectMaxTime), unless that would eject more than
// EjectMaxShare of the route's backends. Ejection never touches breakers.
func (p *Handler) passive(rt *router.Route, b *router.Backend, failed bool, now int64) {
	st := b.State().Ejection()
	if !failed {
		if st.Failures.Load() != 0 {
			st.Failures.Store(0)
		}
		// A backend that stays good for as long as it was last ejected
		// starts its backoff from scratch.
		if st.Run.Load() != 0 {
			if u := st.Until.Load(); now > u+st.Last.Load() {
				st.Run.Store(0)
			}
		}
		return
	}
	if p.opts.EjectAfter < 0 || int(st.Failures.Add(1)) < p.opts.EjectAfter {
		return
	}
	rs := rt.State()
	rs.LockEjection()
	defer rs.UnlockEjection()
	if st.Ejected(now) {
		return
	}
	bs := rt.Backends()
	ejected := 0
	for _, o := range bs {
		if o.State() != b.State() && o.State().Ejected(now) {
			ejected++
		}
	}
	limit := max(1, int(p.opts.EjectMaxShare*float64(len(bs))))
	if ejected+1 > limit {
		return
	}
	n := st.Run.Load()
	d := p.opts.EjectTime
	for i := int32(0); i < n && d < p.opts.EjectMaxTime; i++ {
		d *= 2
	}
	d = min(d, p.opts.EjectMaxTime)
	st.Until.Store(now + int64(d))
	st.Last.Store(int64(d))
	st.Run.Add(1)
	st.Failures.Store(0)
	p.log.Warn().Str("event", "backend_ejected").Str("route", rt.Config().ID).Str("backend", b.HostPort()).
		Int("after_failures", p.opts.EjectAfter).Dur("for", d).Int32("ejections_in_a_row", n+1).
		Msg("backend ejected after consecutive failures")
}
