package kubernetes

import (
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/provider"
)

// Status is a snapshot of the provider's hold on the API server.
type Status struct {
	// State is connecting until every informer's cache has synced, and
	// while an informer relists after its watch ended (a 410 Gone when the
	// server compacted past it, a timeout); disconnected while a list or
	// a watch request of some informer fails (the API server unreachable,
	// 403 Forbidden from RBAC, any other error), each retried with
	// client-go's backoff; connected otherwise. The caches keep their
	// last good content meanwhile, so the routes they made keep serving.
	State provider.State
	// Since is when the provider last became connected or stopped being
	// connected (its start, if it never was). The connecting and
	// disconnected of retries do not move it, so that it dates the outage.
	Since time.Time
	// LastError is the last failed list or watch request's error. It is
	// kept while connecting again and cleared once connected.
	LastError string
	// Retries counts the failed list and watch requests, each of which
	// client-go retries.
	Retries uint64
	// Reconnects counts the recoveries: the times the provider became
	// connected after being disconnected (an API server unreachable at
	// start included), as levee_provider_reconnects_total does. A
	// routine relist (connecting, no failed request) is not one.
	Reconnects uint64
}

// conn tracks the informers' requests and turns them into the Status,
// the levee_provider_* series (levee_provider_reconnects_total counting
// the recoveries) and the log lines: an outage is logged once
// at error level with its first error, its retries at debug, its end at
// info, so an unreachable API server does not fill the log.
type conn struct {
	now        func() time.Time
	log        zerolog.Logger
	metrics    *provider.ConnectionMetrics
	reconnects *provider.Reconnects

	mu     sync.Mutex
	status Status
	synced bool
	// failing holds the informers whose last request failed, with the
	// error; relisting those whose watch ended and has not been opened
	// again. Both are keyed by informer name ("shop/ingresses").
	failing   map[string]error
	relisting map[string]bool
	// announced is set once an outage was logged at error level: from
	// the first failed request until connected again, which is then a
	// recovery.
	announced bool
}

func newConn(now func() time.Time, log zerolog.Logger, m *provider.ConnectionMetrics, r *provider.Reconnects) *conn {
	m.Set(provider.StateConnecting)
	return &conn{now: now, log: log, metrics: m, reconnects: r, failing: map[string]error{}, relisting: map[string]bool{},
		status: Status{State: provider.StateConnecting, Since: now()}}
}

// Status is the current snapshot; safe from any goroutine.
func (c *conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// failed records that informer's list or watch request failed with err.
func (c *conn) failed(informer string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failing[informer] = err
	delete(c.relisting, informer)
	c.status.LastError = err.Error()
	c.status.Retries++
	c.update()
	if !c.announced {
		c.announced = true
		c.log.Error().Err(err).Str("informer", informer).
			Msg("kubernetes provider: cannot list or watch the API server; the routes last read keep serving, retrying in the background")
		return
	}
	c.log.Debug().Err(err).Str("informer", informer).Msg("kubernetes provider: API server request failed again")
}

// watching records that informer opened its watch: its list (or the
// watch's initial events) and its watch both answered.
func (c *conn) watching(informer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.failing, informer)
	delete(c.relisting, informer)
	c.update()
}

// watchEnded records that informer's watch ended with err (a 410 Gone
// most often), or that a request of it was answered 410: the informer
// lists again, which is routine, so it is logged at debug only.
func (c *conn) watchEnded(informer string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, failing := c.failing[informer]; !failing {
		c.relisting[informer] = true
	}
	c.update()
	c.log.Debug().Err(err).Str("informer", informer).Msg("kubernetes provider: watch ended; relisting")
}

// cachesSynced records that every cache has been filled once.
func (c *conn) cachesSynced() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.synced = true
	c.update()
}

// stopped records that the provider stopped watching.
func (c *conn) stopped() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set(provider.StateDisconnected)
}

// update derives the state from the informers' and says so when an outage
// ends. Callers hold mu.
func (c *conn) update() {
	s := provider.StateConnected
	switch {
	case len(c.failing) > 0:
		s = provider.StateDisconnected
	case !c.synced || len(c.relisting) > 0:
		s = provider.StateConnecting
	}
	if s == provider.StateConnected && c.status.State != provider.StateConnected {
		c.status.LastError = ""
		if c.announced {
			c.announced = false
			c.status.Reconnects++
			c.reconnects.Inc()
			c.log.Info().Msg("kubernetes provider: connected to the API server again")
		} else {
			c.log.Info().Msg("kubernetes provider: connected to the API server")
		}
	}
	c.set(s)
}

// set records s, moving Since when connectedness changes. Callers hold mu.
func (c *conn) set(s provider.State) {
	if (s == provider.StateConnected) != (c.status.State == provider.StateConnected) {
		c.status.Since = c.now()
	}
	c.status.State = s
	c.metrics.Set(s)
}
