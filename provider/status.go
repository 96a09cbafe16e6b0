package provider

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// State is a provider's hold on its source: the engine's event stream for
// the Docker provider, the watched directories for the file provider, the
// informers' lists and watches for the Kubernetes provider.
type State string

const (
	// StateConnecting: before the first full read of the source, and
	// while a new attempt is under way.
	StateConnecting State = "connecting"
	// StateConnected: the source is followed and its full set was read.
	StateConnected State = "connected"
	// StateDisconnected: the source is not followed; the routes of the
	// last good read stay in place meanwhile.
	StateDisconnected State = "disconnected"
)

var states = []State{StateConnecting, StateConnected, StateDisconnected}

// The series every provider with a connection to its source exports,
// labelled provider="<name>" (docker, swarm, file, kubernetes). A Prometheus registry
// takes several collectors of one name only when their help texts are the
// same, so the providers share them through ConnectionMetrics.
const (
	ConnectedMetric  = "levee_provider_connected"
	ConnectedHelp    = "1 while the provider is connected to its source (docker: event stream open, full sync delivered, pings answered; file: every directory watched and read; kubernetes: every informer listed and watching), else 0."
	StateMetric      = "levee_provider_state"
	StateHelp        = "1 for the provider's current connection state (connecting, connected, disconnected), 0 for the others."
	ReconnectsMetric = "levee_provider_reconnects_total"
	ReconnectsHelp   = "Times the provider connected again (docker, swarm: connection attempts after the first, after a failed attempt or a lost connection; kubernetes: recoveries from disconnected to connected)."
)

// ConnectionMetrics are one provider's levee_provider_connected and
// levee_provider_state series. A nil *ConnectionMetrics records nothing.
type ConnectionMetrics struct {
	connected prometheus.Gauge
	state     *prometheus.GaugeVec
}

// NewConnectionMetrics registers the series labelled provider=name with
// reg, in the connecting state. A nil reg registers none and returns nil.
func NewConnectionMetrics(reg prometheus.Registerer, name string) (*ConnectionMetrics, error) {
	return NewConnectionMetricsLabelled(reg, prometheus.Labels{"provider": name})
}

// HostLabel names the engine of one of several Docker hosts on a
// provider's series (host="edge2"). A registry takes one metric name with
// one set of label names only, so with several hosts every provider's
// series carry it, empty for a provider without hosts (Prometheus reads an
// empty label as no label).
const HostLabel = "host"

// NewConnectionMetricsLabelled is NewConnectionMetrics with the constant
// labels given, which name the provider ("provider") and may add HostLabel.
func NewConnectionMetricsLabelled(reg prometheus.Registerer, labels prometheus.Labels) (*ConnectionMetrics, error) {
	if reg == nil {
		return nil, nil
	}
	name := labels["provider"]
	m := &ConnectionMetrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Name: ConnectedMetric, Help: ConnectedHelp, ConstLabels: labels}),
		state:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: StateMetric, Help: StateHelp, ConstLabels: labels}, []string{"state"}),
	}
	for _, c := range []prometheus.Collector{m.connected, m.state} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the %s provider's metrics: %w", name, err)
		}
	}
	m.Set(StateConnecting)
	return m, nil
}

// Set records s as the current state.
func (m *ConnectionMetrics) Set(s State) {
	if m == nil {
		return
	}
	for _, x := range states {
		v := 0.0
		if x == s {
			v = 1
		}
		m.state.WithLabelValues(string(x)).Set(v)
	}
	if s == StateConnected {
		m.connected.Set(1)
	} else {
		m.connected.Set(0)
	}
}

// Reconnects is one provider's levee_provider_reconnects_total. A nil
// *Reconnects records nothing.
type Reconnects struct {
	c prometheus.Counter
}

// NewReconnects registers the counter with the constant labels given
// (those of NewConnectionMetricsLabelled). A nil reg registers none and
// returns nil.
func NewReconnects(reg prometheus.Registerer, labels prometheus.Labels) (*Reconnects, error) {
	if reg == nil {
		return nil, nil
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: ReconnectsMetric, Help: ReconnectsHelp, ConstLabels: labels})
	if err := reg.Register(c); err != nil {
		return nil, fmt.Errorf("registering the %s provider's %s: %w", labels["provider"], ReconnectsMetric, err)
	}
	return &Reconnects{c: c}, nil
}

// Inc counts one reconnection.
func (r *Reconnects) Inc() {
	if r != nil {
		r.c.Inc()
	}
}
