package fleet

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's series. Per-breaker series are deleted when the
// breaker leaves.
type metrics struct {
	flushSeconds  prometheus.Histogram
	batchOutcomes prometheus.Histogram
	errors        prometheus.Counter
	dropped       prometheus.Counter
	flushed       *prometheus.CounterVec
	fallback      *prometheus.GaugeVec
	window        *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		flushSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "levee_breaker_store_flush_seconds", Help: "Duration of one flush round to the breaker store (all breakers, one pipeline).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}),
		batchOutcomes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "levee_breaker_store_batch_outcomes", Help: "Outcomes sent in one flush round (all breakers).",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "levee_breaker_store_errors_total", Help: "Breaker flushes that failed (no answer, an error or a malformed answer).",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "levee_breaker_store_batches_dropped_total", Help: "Batches given up after the store stayed unreachable for 5 minutes (their outcomes are not in the fleet counts).",
		}),
		flushed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "levee_breaker_store_outcomes_total", Help: "Outcomes this replica counted into the fleet, by breaker.",
		}, []string{"breaker"}),
		fallback: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "levee_breaker_store_fallback", Help: "1 while a shared breaker judges locally because the store is unreachable or answers garbage.",
		}, []string{"breaker"}),
		window: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "levee_breaker_store_window_outcomes", Help: "Outcomes in a breaker's window: the fleet's (view=fleet) and this replica's own (view=local).",
		}, []string{"breaker", "view"}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	var errs []error
	for _, c := range []prometheus.Collector{m.flushSeconds, m.batchOutcomes, m.errors, m.dropped, m.flushed, m.fallback, m.window} {
		errs = append(errs, r.Register(c))
	}
	return errors.Join(errs...)
}

func (m *metrics) forget(name string) {
	m.flushed.DeleteLabelValues(name)
	m.fallback.DeleteLabelValues(name)
	m.window.DeletePartialMatch(prometheus.Labels{"breaker": name})
}
