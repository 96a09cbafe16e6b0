package docker

import (
	"context"
	"errors"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/levee-proxy/levee/provider"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
)

// ending is how a session ended.
type ending int

const (
	// failed: the attempt failed (no answer, or the full sync failed).
	failed ending = iota
	// noStream: the engine answers, but its event stream could not be
	// opened; nothing was synced yet.
	noStream
	// lost: the connection was up, and the stream or the watchdog's ping
	// failed.
	lost
)

// Run watches the engine and sends sink every change until ctx ends; it
// then returns nil. It never gives up on an unreachable engine. Run must not
// be called twice at once.
func (p *Provider) Run(ctx context.Context, sink Sink) error {
	defer p.setState(provider.StateDisconnected, nil)
	bo := newBackoff(p.opts.RetryMin, p.opts.RetryMax, p.opts.Jitter)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			p.reconnecting()
		}
		p.setState(provider.StateConnecting, nil)
		end, err := p.session(ctx, sink, bo.reset)
		if ctx.Err() != nil {
			return nil
		}
		delay := bo.delay()
		p.setState(provider.StateDisconnected, err)
		p.logEnding(end, err, delay)
		if end == failed && p.hosts != nil {
			// The engine does not answer (a reconnect after a lost
			// stream failed too): its containers would fail anyway.
			p.judged.Store(true)
			p.hosts.lost(p.opts.HostName, err)
			p.everSent = false // the next sync is sent whatever it holds
		}
		if end == noStream {
			p.syncWithoutStream(ctx, sink)
		}
		t := p.opts.Clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// logEnding reports why a session ended: a lost connection as a warning,
// the first failed attempt of an outage as an error naming the address,
// the retries that follow at debug.
func (p *Provider) logEnding(end ending, err error, delay time.Duration) {
	switch {
	case end == lost:
		p.log.Warn().Err(err).Dur("retry_in_ms", delay).
			Msgf("%s: lost the connection to the engine at %s; reconnecting and resyncing", p.name, p.host)
		p.announced = true
	case !p.announced:
		p.log.Error().Err(err).Dur("retry_in_ms", delay).
			Msgf("%s: cannot reach the Docker engine at %s; other sources keep serving, retrying in the background", p.name, p.host)
		p.announced = true
	default:
		p.log.Debug().Err(err).Dur("retry_in_ms", delay).Msgf("%s: engine at %s still unreachable", p.name, p.host)
	}
}

// syncWithoutStream lists and publishes when the engine answers but its
// event stream cannot be opened (a socket proxy refusing /events, an
// engine whose /events hangs), so that routes follow the engine at the
// retry pace, at most RetryMax apart, instead of freezing. Its failure adds
// nothing to the error already logged.
func (p *Provider) syncWithoutStream(ctx context.Context, sink Sink) {
	if err := p.fullSync(ctx); err != nil {
		p.log.Debug().Err(err).Msgf("%s: sync without an event stream failed", p.name)
		return
	}
	p.log.Debug().Int("containers", len(p.cache)).Msgf("%s: synced without an event stream", p.name)
	p.publish(sink, !p.everSent)
}

// session is one connection attempt and, when it succeeds, the connection:
// ping, open the event stream, full sync, then follow events until the
// stream or the watchdog's ping fails. stable is called when the
// connection has stayed up through a watchdog ping.
func (p *Provider) session(ctx context.Context, sink Sink, stable func()) (ending, error) {
	if err := p.ping(ctx); err != nil {
		return failed, err
	}
	// Subscribe before listing, so nothing that happens during the list is
	// missed; events about containers already listed are harmless.
	st, err := p.subscribe(ctx)
	if err != nil {
		return noStream, err
	}
	defer st.close()
	if err := p.fullSync(ctx); err != nil {
		return failed, err
	}
	// The client reports the stream open just before it queues a refusal,
	// so a refusal can land after subscribe: by now it has. The sync is
	// good all the same.
	if err := st.refused(); err != nil {
		p.publish(sink, !p.everSent)
		return failed, fmt.Errorf("open the event stream at %s: %w", p.host, err)
	}
	p.announced = false
	p.setState(provider.StateConnected, nil)
	p.log.Info().Msgf("%s: connected to the engine at %s", p.name, p.host)
	p.publish(sink, !p.everSent)
	return lost, p.follow(ctx, sink, st, stable)
}

// ping asks the engine whether it answers, within CallTimeout. A refusal
// (a 4xx status, e.g. from a socket proxy that does not allow /_ping) is
// an answer in time, which is all the ping asks for.
func (p *Provider) ping(ctx context.Context) error {
	err := bounded(ctx, p.opts.CallTimeout, func(ctx context.Context) error {
		err := p.eng.Ping(ctx)
		return err
	})
	if err != nil && !isRefusal(err) {
		return fmt.Errorf("ping the engine at %s: %w", p.host, err)
	}
	return nil
}

// isRefusal reports whether err is an answer with a client-error status.
func isRefusal(err error) bool {
	return cerrdefs.IsInvalidArgument(err) || cerrdefs.IsUnauthorized(err) || cerrdefs.IsPermissionDenied(err) ||
		cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err)
}

// stream is an open event stream; close abandons it.
type stream struct {
	msgs  <-chan events.Message
	errs  <-chan error
	close context.CancelFunc
}

// refused returns the error already queued on a stream that failed as it
// opened (and abandons it), or nil.
func (st *stream) refused() error {
	select {
	case err := <-st.errs:
		st.close()
		if err == nil {
			err = errors.New("closed at once")
		}
		return err
	default:
		return nil
	}
}

// subscribe opens the event stream. The client's Events returns only once
// the engine has sent the response headers, and its request has no
// deadline of its own (the stream lives as long as its context), so it runs
// aside and is abandoned when the headers do not come within CallTimeout.
// A refusal the engine answered at once is returned here too.
func (p *Provider) subscribe(ctx context.Context) (*stream, error) {
	sctx, cancel := context.WithCancel(ctx)
	opened := make(chan *stream, 1)
	go func() {
		msgs, errs := p.eng.Events(sctx, client.EventsListOptions{Filters: p.eventFilters()})
		opened <- &stream{msgs: msgs, errs: errs, close: cancel}
	}()
	deadline, stop := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer stop()
	select {
	case st := <-opened:
		if err := st.refused(); err != nil {
			return nil, fmt.Errorf("open the event stream at %s: %w", p.host, err)
		}
		return st, nil
	case <-deadline.Done():
		cancel()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("open the event stream at %s: no answer within %v", p.host, p.opts.CallTimeout)
	}
}

// follow applies events until the stream fails, the watchdog's ping
// fails, or ctx ends. A change after a quiet period is published at once,
// so a lone `docker start` is routed without waiting; changes that follow
// within the Debounce window are published together when it ends.
func (p *Provider) follow(ctx context.Context, sink Sink, st *stream, stable func()) error {
	resync := p.opts.Clock.NewTimer(p.opts.ResyncInterval)
	defer func() { resync.Stop() }()
	watchdog := p.opts.Clock.NewTimer(p.opts.PingInterval)
	defer func() { watchdog.Stop() }()
	win := debounce{clock: p.opts.Clock, d: p.opts.Debounce}
	defer win.stop()
	poll := poller{clock: p.opts.Clock}
	defer poll.stop()
	poll.arm(p.pollEvery(), false)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-st.errs:
			if err == nil {
				err = errors.New("closed")
			}
			return fmt.Errorf("event stream from %s: %w", p.host, err)
		case m, ok := <-st.msgs:
			if !ok {
				return fmt.Errorf("event stream from %s: closed", p.host)
			}
			changed, err := p.apply(ctx, m)
			if err != nil {
				return err
			}
			// A Swarm task seen stopping (urgent) is published at once,
			// window or not: its server takes no new request.
			if changed && (win.change() || p.urgent) {
				if err := p.flush(ctx, sink); err != nil {
					return err
				}
			}
			poll.arm(p.pollEvery(), false)
		case <-win.c:
			if win.expired() {
				if err := p.flush(ctx, sink); err != nil {
					return err
				}
			}
		case <-poll.c:
			// Swarm mode only: re-list, since a task on another node
			// stops without an event.
			p.stale = true
			if err := p.flush(ctx, sink); err != nil {
				return err
			}
			poll.arm(p.pollEvery(), true)
		case <-resync.C():
			if err := p.fullSync(ctx); err != nil {
				return err
			}
			p.log.Debug().Int("containers", len(p.cache)).Msgf("%s: periodic resync", p.name)
			// The resync publishes everything collected so far.
			win.dirty = false
			p.publish(sink, false)
			resync = p.opts.Clock.NewTimer(p.opts.ResyncInterval)
		case <-watchdog.C():
			if err := p.ping(ctx); err != nil {
				return fmt.Errorf("watchdog: %w", err)
			}
			stable()
			watchdog = p.opts.Clock.NewTimer(p.opts.PingInterval)
		}
	}
}

// debounce is follow's coalescing window. c is nil while no window is
// open.
type debounce struct {
	clock Clock
	d     time.Duration
	t     Timer
	c     <-chan time.Time
	dirty bool
}

// change records a change and reports whether to publish it now: yes after
// a quiet period (a window then opens), else it waits for the window's end.
func (w *debounce) change() bool {
	if w.c == nil {
		w.open()
		return true
	}
	w.dirty = true
	return false
}

// expired closes the window and reports whether changes were collected in
// it; if so they are published now, and a new window opens.
func (w *debounce) expired() bool {
	w.t, w.c = nil, nil
	if !w.dirty {
		return false
	}
	w.dirty = false
	w.open()
	return true
}

func (w *debounce) open() {
	w.t = w.clock.NewTimer(w.d)
	w.c = w.t.C()
}

func (w *debounce) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// eventFilters selects the events that can change the container set. The
// health_status variants are listed too because older engines match the
// action string exactly ("health_status: healthy").
func eventFilters() client.Filters {
	f := make(client.Filters).Add("type", string(events.ContainerEventType)).Add("type", string(events.NetworkEventType))
	for _, a := range []string{
		"start", "kill", "die", "stop", "destroy", "pause", "unpause", "rename",
		"health_status", "health_status: starting", "health_status: healthy", "health_status: unhealthy",
		"connect", "disconnect",
	} {
		f.Add("event", a)
	}
	return f
}
