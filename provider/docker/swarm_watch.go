package docker

import (
	"context"
	"strings"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/provider/labels"
)

// swarmServiceLabel and swarmTaskLabel are labels the engine puts on the
// container of a Swarm task; container events carry them as attributes.
const (
	swarmServiceLabel = "com.docker.swarm.service.id"
	swarmTaskLabel    = "com.docker.swarm.task.id"
)

// swarmSync replaces the cache with a fresh list of the swarm and
// re-detects Levee's own container.
func (p *Provider) swarmSync(ctx context.Context) error {
	st, err := listSwarm(ctx, p.swarm, p.host, p.opts.CallTimeout)
	if err != nil {
		return err
	}
	if st.onNode, err = taskBindings(ctx, p.eng, p.opts.CallTimeout, st.tasks, p.ports); err != nil {
		return err
	}
	prefix := p.opts.Parser.Prefix
	if prefix == "" {
		prefix = labels.DefaultPrefix
	}
	var settled bool
	p.cache, settled = swarmFacts(st, prefix)
	switch {
	case settled:
		p.unsettledSince = time.Time{}
	case p.settled:
		p.unsettledSince = p.opts.Clock.Now()
	}
	p.settled = settled
	p.dropGone()
	p.stale = false
	return p.detectOwn(ctx)
}

// dropGone removes from the cache the tasks whose container this node saw
// being stopped or dying: the manager records the task's end a moment
// later, and until then a task whose server is shutting down would get
// new requests. An entry expires after the settle window, so a task that
// survives its signal comes back.
func (p *Provider) dropGone() {
	now := p.opts.Clock.Now()
	for id, at := range p.gone {
		if now.Sub(at) > swarmSettleWindow {
			delete(p.gone, id)
		}
	}
	if len(p.gone) == 0 {
		return
	}
	for k, c := range p.cache {
		kept := c.Tasks[:0:0]
		for _, t := range c.Tasks {
			if _, gone := p.gone[t.ID]; !gone {
				kept = append(kept, t)
			}
		}
		c.Tasks = kept
		p.cache[k] = c
	}
}

// stopSignals are the signals of a kill event that end a task's server:
// SIGINT, SIGKILL, SIGTERM (Swarm stops a task with SIGTERM, or its
// stop_signal, then SIGKILL).
var stopSignals = map[string]bool{"": true, "2": true, "9": true, "15": true, "SIGINT": true, "SIGKILL": true, "SIGTERM": true}

// swarmEvent marks the swarm stale on an event that can change it: a
// service or node change, a task's container starting or stopping on
// this node, Levee's own container joining or leaving a network. The
// re-list happens when the change is published, so a burst costs one.
// The task poll runs at the settle period for a while after it, since the
// manager records a task's new state shortly after the event.
func (p *Provider) swarmEvent(m events.Message) bool {
	switch m.Type {
	case events.ServiceEventType, events.NodeEventType:
	case events.ContainerEventType:
		if m.Actor.Attributes[swarmServiceLabel] == "" {
			return false
		}
		action, _, _ := strings.Cut(string(m.Action), ":")
		task := m.Actor.Attributes[swarmTaskLabel]
		// A task container that starts again (docker restart) may get
		// new host ports: it is inspected again on the next list.
		delete(p.ports, m.Actor.ID)
		switch {
		case task == "":
		case action == "kill" && stopSignals[m.Actor.Attributes["signal"]],
			action == "die", action == "stop", action == "destroy":
			if _, known := p.gone[task]; !known {
				p.gone[task] = p.opts.Clock.Now()
				// Published before the re-list (flush): a server
				// shutting down gets no new request from here on.
				p.dropGone()
				p.urgent = true
			}
		}
	case events.NetworkEventType:
		if p.ownID == "" || m.Actor.Attributes["container"] != p.ownID {
			return false
		}
	default:
		return false
	}
	p.stale = true
	p.settleUntil = p.opts.Clock.Now().Add(swarmSettleWindow)
	return true
}

// flush publishes the current set, re-listing the swarm first when an
// event made it stale.
func (p *Provider) flush(ctx context.Context, sink Sink) error {
	if p.urgent {
		p.urgent = false
		p.publish(sink, false)
	}
	if p.stale {
		if err := p.fullSync(ctx); err != nil {
			return err
		}
	}
	p.publish(sink, false)
	return nil
}

// pollEvery is the period of the swarm re-list: the settle period shortly
// after an event, and while a labelled service scales (for at most
// swarmUnsettledMax), else the poll period; 0 (no poll) for containers,
// whose every change has an event.
func (p *Provider) pollEvery() time.Duration {
	switch {
	case p.swarm == nil:
		return 0
	case p.opts.Clock.Now().Before(p.settleUntil):
		return p.opts.SwarmSettle
	case !p.settled && p.opts.Clock.Now().Sub(p.unsettledSince) < swarmUnsettledMax:
		// A service that never reaches its replica count (no node
		// fits its constraints, a crash loop) is polled closely for a
		// while, not forever.
		return p.opts.SwarmSettle
	default:
		return p.opts.SwarmPoll
	}
}

// poller is follow's swarm re-list timer, re-armed when its period
// changes.
type poller struct {
	clock Clock
	every time.Duration
	t     Timer
	c     <-chan time.Time
}

// arm (re)starts the timer for period d unless it already runs with it;
// d = 0 stops it.
func (w *poller) arm(d time.Duration, force bool) {
	if d == w.every && !force {
		return
	}
	w.stop()
	w.every = d
	if d > 0 {
		w.t = w.clock.NewTimer(d)
		w.c = w.t.C()
	}
}

func (w *poller) stop() {
	if w.t != nil {
		w.t.Stop()
	}
	w.t, w.c = nil, nil
}

// eventFilters selects the events that can change what the provider
// watches.
func (p *Provider) eventFilters() client.Filters {
	if p.swarm == nil {
		return eventFilters()
	}
	f := make(client.Filters).Add("type", string(events.ServiceEventType)).Add("type", string(events.NodeEventType)).Add("type", string(events.ContainerEventType)).Add("type", string(events.NetworkEventType))
	for _, a := range []string{"create", "update", "remove", "start", "kill", "die", "stop", "destroy", "connect", "disconnect"} {
		f.Add("event", a)
	}
	return f
}
