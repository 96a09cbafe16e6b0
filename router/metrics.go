package router

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/breaker"
)

// noRule is the rule label of breaker transitions no trip rule caused (to
// half-open after the cooldown, to closed after successful probes). A
// label is never empty: Prometheus reads rule="" as "no rule label", so
// such series could not be selected by value next to the others.
const noRule = "none"

// ruleLabel is the rule label of levee_breaker_transitions_total.
func ruleLabel(r breaker.Rule) string {
	if s := r.String(); s != "" {
		return s
	}
	return noRule
}

// metrics are the router's Prometheus series: breakers (transitions,
// rejections, state), backend rotation, diagnostics and the event bus. The
// request path's series (requests, durations, retries, client errors) are
// package proxy's. Label cardinality is bounded by routes, backends and
// breaker transitions; series of a route are deleted when its state is
// dropped.
type metrics struct {
	transitions   *prometheus.CounterVec
	rejected      *prometheus.CounterVec
	refusals      *prometheus.CounterVec
	eventsDropped prometheus.Counter

	breakerState *prometheus.Desc
	backendUp    *prometheus.Desc
	diagnostics  *prometheus.Desc
}

func newMetrics() *metrics {
	m := &metrics{
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_breaker_transitions_total", Help: "Circuit breaker transitions, by breaker, target state and trip rule.",
		}, []string{"route", "to", "rule"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_breaker_rejected_total", Help: "Requests rejected by an open (or saturated half-open) circuit breaker.",
		}, []string{"route"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_policy_refusals_total", Help: "Requests a route's policy refused (IP allow-list, rate or in-flight limit, auth), by policy and reason (the X-Levee-Diagnostic value).",
		}, []string{"route", "policy", "reason"}),
		eventsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "levee_events_dropped_total", Help: "Events a slow subscriber lost because its buffer was full.",
		}),
		breakerState: prometheus.NewDesc("levee_breaker_state",
			"Circuit breaker state: 0 closed, 1 open, 2 half-open. Breakers of scope=backend are named route@address:port.",
			[]string{"route"}, nil),
		backendUp: prometheus.NewDesc("levee_backend_up",
			"1 when the backend is in rotation (active health up and not ejected), else 0.",
			[]string{"route", "backend"}, nil),
		diagnostics: prometheus.NewDesc("levee_diagnostics",
			"Current configuration diagnostics, by code and severity.",
			[]string{"code", "severity"}, nil),
	}
	return m
}

// register adds every series to reg; the gauges read the router's live
// state at scrape time through collector.
func (m *metrics) register(reg prometheus.Registerer, c prometheus.Collector) error {
	for _, col := range []prometheus.Collector{m.transitions, m.rejected, m.refusals, m.eventsDropped, c} {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("registering router metrics: %w", err)
		}
	}
	return nil
}

// forget deletes a dropped route's series.
func (m *metrics) forget(route string) {
	m.rejected.DeleteLabelValues(route)
	m.transitions.DeletePartialMatch(prometheus.Labels{"route": route})
	m.refusals.DeletePartialMatch(prometheus.Labels{"route": route})
}

// stateCollector reports gauges computed from live state at scrape time:
// breaker states, backend rotation, diagnostics counts.
type stateCollector struct{ r *Router }

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.r.metrics.breakerState
	ch <- c.r.metrics.backendUp
	ch <- c.r.metrics.diagnostics
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.r.metrics
	now := c.r.clock.Now().UnixNano()
	for _, rt := range c.r.snap.Load().routes {
		if rt.ghost {
			continue
		}
		for _, g := range rt.state.guards() {
			ch <- prometheus.MustNewConstMetric(m.breakerState, prometheus.GaugeValue, stateValue(g.b.State()), g.name())
		}
		// A route may list one address twice (two API entries, two
		// weights); both share one state, so the series is emitted once:
		// a repeated label set would fail the whole scrape.
		seen := make(map[*BackendState]bool, len(rt.backends))
		for _, b := range rt.backends {
			if seen[b.st] {
				continue
			}
			seen[b.st] = true
			up := 0.0
			if !b.st.down.Load() && !b.st.ejected(now) {
				up = 1
			}
			ch <- prometheus.MustNewConstMetric(m.backendUp, prometheus.GaugeValue, up, rt.ep.ID, b.hostport)
		}
	}
	type key struct{ code, sev string }
	counts := map[key]int{}
	for _, d := range c.r.Diagnostics() {
		counts[key{string(d.Code), d.Severity.String()}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(m.diagnostics, prometheus.GaugeValue, float64(n), k.code, k.sev)
	}
}

func stateValue(s breaker.State) float64 {
	switch s {
	case breaker.Open:
		return 1
	case breaker.HalfOpen:
		return 2
	}
	return 0
}
