package docker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/provider"
)

// Status is a snapshot of the provider's connection, for the API.
type Status struct {
	// State is connecting while an attempt is under way (ping, open the
	// event stream, full sync: at start and after each backoff),
	// connected while the event stream is open, the full sync was
	// delivered and the engine answers the watchdog's pings, and
	// disconnected while the provider waits out its backoff.
	State provider.State
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
func (p *Provider) setState(s provider.State, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if (s == provider.StateConnected) != (p.status.State == provider.StateConnected) {
		p.status.Since = p.opts.Clock.Now()
	}
	p.status.State = s
	switch {
	case err != nil:
		p.status.LastError = err.Error()
	case s == provider.StateConnected:
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
	connection *provider.ConnectionMetrics
	reconnects *provider.Reconnects
}

// With a host name (one of several hosts) every series carries host=<name>
// too.
func newMetrics(reg prometheus.Registerer, name, host string) (*metrics, error) {
	constLabels := prometheus.Labels{"provider": name}
	if host != "" {
		constLabels[provider.HostLabel] = host
	}
	connection, err := provider.NewConnectionMetricsLabelled(reg, constLabels)
	if err != nil {
		return nil, err
	}
	reconnects, err := provider.NewReconnects(reg, constLabels)
	if err != nil {
		return nil, err
	}
	m := &metrics{connection: connection, reconnects: reconnects}
	return m, nil
}

func (m *metrics) set(s provider.State) { m.connection.Set(s) }
