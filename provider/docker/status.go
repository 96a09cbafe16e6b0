package docker

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/provider"
)

// State is the provider's connection to the engine.
type State string

const (
	// StateConnecting: an attempt is under way (ping, open the event
	// stream, full sync). The state at start and after each backoff.
	StateConnecting State = "connecting"
	// StateConnected: the event stream is open, the full sync was
	// delivered, and the engine answers the watchdog's pings.
	StateConnected State = "connected"
	// StateDisconnected: the last attempt failed or the connection was
	// lost; the provider waits out its backoff, then tries again. The
	// routes of the last successful sync stay in place meanwhile.
	StateDisconnected State = "disconnected"
)

var states = []State{StateConnecting, StateConnected, StateDisconnected}

// Status is a snapshot of the provider's connection, for the API.
type Status struct {
	State State
	// Since is when the provider last became connected or stopped being
	// connected (its start, if it never was), by its Clock. The
	// connecting and disconnected of each retry do not move it, so that
	// it dates the outage.
	Since time.Time
	// LastError ended the last attempt or connection. It is kept while
	// connecting again and cleared once connected.
	LastError string
	// Reconnects counts the attempts after the first.
	Reconnects uint64
	// Synced is Synced(): some full sync has reached the sink.
	Synced bool
}

// Status reports the provider's connection state. It is safe to call from
// any goroutine.
func (p *Provider) Status() Status {
	p.mu.Lock()
	s := p.status
	p.mu.Unlock()
	s.Synced = p.synced.Load()
	return s
}

// setState records a state change; err, when not nil, becomes LastError.
func (p *Provider) setState(s State, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if (s == StateConnected) != (p.status.State == StateConnected) {
		p.status.Since = p.opts.Clock.Now()
	}
	p.status.State = s
	switch {
	case err != nil:
		p.status.LastError = err.Error()
	case s == StateConnected:
		p.status.LastError = ""
	}
	p.metrics.set(s)
}

// reconnecting counts one attempt after the first.
func (p *Provider) reconnecting() {
	p.mu.Lock()
	p.status.Reconnects++
	p.mu.Unlock()
	p.metrics.reconnects.Inc()
}

// metrics are the provider's series, labelled provider="docker" (or
// "swarm") so that other providers can share the names.
type metrics struct {
	connected  prometheus.Gauge
	state      *prometheus.GaugeVec
	reconnects prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, name string) (*metrics, error) {
	constLabels := prometheus.Labels{"provider": name}
	m := &metrics{
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name:        provider.ConnectedMetric,
			Help:        provider.ConnectedHelp,
			ConstLabels: constLabels,
		}),
		state: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name:        provider.StateMetric,
			Help:        provider.StateHelp,
			ConstLabels: constLabels,
		}, []string{"state"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name:        "levee_provider_reconnects_total",
			Help:        "Connection attempts after the first: after a failed attempt or a lost connection.",
			ConstLabels: constLabels,
		}),
	}
	for _, c := range []prometheus.Collector{m.connected, m.state, m.reconnects} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering the %s provider's metrics: %w", name, err)
		}
	}
	m.set(StateConnecting)
	return m, nil
}

func (m *metrics) set(s State) {
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
