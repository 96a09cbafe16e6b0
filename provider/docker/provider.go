package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Defaults for Options.
const (
	DefaultDebounce       = 100 * time.Millisecond
	DefaultResyncInterval = 5 * time.Minute
	// DefaultCallTimeout bounds each engine call.
	DefaultCallTimeout = 10 * time.Second
	// DefaultPingInterval is the watchdog's period while connected.
	DefaultPingInterval = 15 * time.Second
)

// Sink receives the provider's complete current output.
type Sink interface {
	Update(config.SourceUpdate)
}

// ParseFunc turns the complete container set into entrypoints; the default
// is labels.Parser.Parse. The parser carries OwnNetworks as detected.
type ParseFunc func(p labels.Parser, containers []labels.Container) ([]config.Entrypoint, []diagnostics.Diagnostic)

// Options configure a Provider. The zero value watches the engine named by
// the environment (DOCKER_HOST, else the local socket) with the defaults.
type Options struct {
	// Host is the engine address, e.g. "unix:///var/run/docker.sock" or
	// "tcp://127.0.0.1:2375". Empty means DOCKER_HOST, else the local socket.
	Host string
	// Parser is the label grammar; its OwnNetworks is filled by the provider.
	Parser labels.Parser
	// Parse replaces Parser.Parse (tests capture the containers with it).
	Parse ParseFunc
	// Debounce is the coalescing window: a change after a quiet period is
	// published at once; changes within the window that follows a publish
	// are collected and published together when it ends
	// (default 100 ms).
	Debounce time.Duration
	// ResyncInterval is the period of the safety-net full resync while
	// connected (default 5 min). Every connection attempt resyncs too.
	ResyncInterval time.Duration
	// CallTimeout bounds each engine call: ping, list, each inspect, and
	// opening the event stream (until the engine sends the response
	// headers), so that a hung engine becomes an error and a reconnect
	// rather than a stuck provider (default 10 s). It is wall-clock time
	// (a context deadline), not Clock time.
	CallTimeout time.Duration
	// PingInterval is the watchdog's period while connected (default
	// 15 s). Docker sends nothing on an idle event stream, so silence
	// cannot tell a quiet engine from a hung one: the engine is pinged,
	// and a ping that fails or exceeds CallTimeout ends the connection
	// (reconnect and full resync).
	PingInterval time.Duration
	// RetryMin and RetryMax bound the reconnect backoff (default 250 ms,
	// 30 s). The base delay doubles from RetryMin up to RetryMax; each
	// delay is jittered down by up to half. It starts over from RetryMin
	// once a connection has stayed up through one watchdog ping, so an
	// engine that accepts and drops at once is not hammered.
	RetryMin, RetryMax time.Duration
	// Jitter returns a uniform number in [0, 1) that places each backoff
	// delay in its jitter range; nil means math/rand/v2's Float64.
	Jitter func() float64
	// Registerer receives the provider's metrics; nil keeps them in a
	// private registry.
	Registerer prometheus.Registerer
	// Logger receives connection state changes and event handling details.
	Logger zerolog.Logger
	// Clock drives every timer; nil means the real clock.
	Clock Clock
	// Hostname identifies Levee's own container; empty means os.Hostname().
	Hostname string
	// SelfID is the ID of the container Levee runs in, when known. Empty
	// means read it from /proc/self/mountinfo (Docker bind-mounts the
	// container's /etc/hostname from /var/lib/docker/containers/<id>/), so
	// that a custom host name (compose `hostname:`) does not hide it; the
	// host name is tried as well.
	SelfID string
}

// Provider watches one Docker Engine. Run drives it; Synced reports whether
// the first full sync has been delivered, Status the connection.
type Provider struct {
	opts    Options
	eng     engine
	host    string
	closer  func() error
	log     zerolog.Logger
	synced  atomic.Bool
	metrics *metrics

	mu     sync.Mutex
	status Status

	// The fields below belong to the Run goroutine.
	// announced is set once an outage has been logged at error or warn
	// level, so that retries stay at debug until a connection succeeds.
	announced bool
	cache     map[string]labels.Container
	ownID     string
	own       []string
	sent      []labels.Container
	sentOwn   []string
	everSent  bool
}

// New makes a Provider for opts.Host. It does not contact the engine: Run
// does, and keeps trying.
func New(opts Options) (*Provider, error) {
	cli, err := newClient(opts.Host)
	if err != nil {
		return nil, err
	}
	p, err := newProvider(opts, cli)
	if err != nil {
		cli.Close()
		return nil, err
	}
	p.closer = cli.Close
	return p, nil
}

func newClient(host string) (*client.Client, error) {
	clientOpts := []client.Opt{client.FromEnv, client.WithAPIVersionNegotiation()}
	if host != "" {
		clientOpts = append(clientOpts, client.WithHost(host))
	}
	cli, err := client.NewClientWithOpts(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for host %q: %w", host, err)
	}
	return cli, nil
}

func newProvider(opts Options, eng engine) (*Provider, error) {
	opts = withDefaults(opts)
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	host := eng.DaemonHost()
	p := &Provider{
		opts:    opts,
		eng:     eng,
		host:    host,
		log:     opts.Logger.With().Str("provider", config.SourceDocker).Str("docker_host", host).Logger(),
		metrics: m,
		status:  Status{State: StateConnecting, Since: opts.Clock.Now()},
		cache:   map[string]labels.Container{},
	}
	return p, nil
}

// withDefaults fills the zero fields of opts.
func withDefaults(opts Options) Options {
	if opts.Parse == nil {
		opts.Parse = labels.Parser.Parse
	}
	defaultDuration(&opts.Debounce, DefaultDebounce)
	defaultDuration(&opts.ResyncInterval, DefaultResyncInterval)
	defaultDuration(&opts.CallTimeout, DefaultCallTimeout)
	defaultDuration(&opts.PingInterval, DefaultPingInterval)
	// Both bounds get their defaults: a zero RetryMax would cap the
	// backoff at RetryMin, retrying every 250 ms forever.
	defaultDuration(&opts.RetryMin, DefaultRetryMin)
	defaultDuration(&opts.RetryMax, DefaultRetryMax)
	if opts.Jitter == nil {
		opts.Jitter = rand.Float64
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Hostname == "" {
		opts.Hostname, _ = os.Hostname()
	}
	if opts.SelfID == "" {
		if f, err := os.Open("/proc/self/mountinfo"); err == nil {
			opts.SelfID = containerIDFromMountinfo(f)
			f.Close()
		}
	}
	return opts
}

func defaultDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// Synced reports whether the first full sync has reached the sink.
func (p *Provider) Synced() bool { return p.synced.Load() }

// Close releases the engine client. Call it after Run has returned.
func (p *Provider) Close() error {
	if p.closer == nil {
		return nil
	}
	return p.closer()
}

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
	defer p.setState(StateDisconnected, nil)
	bo := newBackoff(p.opts.RetryMin, p.opts.RetryMax, p.opts.Jitter)
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			p.reconnecting()
		}
		p.setState(StateConnecting, nil)
		end, err := p.session(ctx, sink, bo.reset)
		if ctx.Err() != nil {
			return nil
		}
		delay := bo.delay()
		p.setState(StateDisconnected, err)
		p.logEnding(end, err, delay)
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
		p.log.Warn().Err(err).Dur("retry_in", delay).
			Msgf("docker: lost the connection to the engine at %s; reconnecting and resyncing", p.host)
		p.announced = true
	case !p.announced:
		p.log.Error().Err(err).Dur("retry_in", delay).
			Msgf("docker: cannot reach the Docker engine at %s; other sources keep serving, retrying in the background", p.host)
		p.announced = true
	default:
		p.log.Debug().Err(err).Dur("retry_in", delay).Msgf("docker: engine at %s still unreachable", p.host)
	}
}

// syncWithoutStream lists and publishes when the engine answers but its
// event stream cannot be opened (a socket proxy refusing /events, an
// engine whose /events hangs), so that routes follow the engine at the
// retry pace, at most RetryMax apart, instead of freezing. Its failure adds
// nothing to the error already logged.
func (p *Provider) syncWithoutStream(ctx context.Context, sink Sink) {
	if err := p.fullSync(ctx); err != nil {
		p.log.Debug().Err(err).Msg("docker: sync without an event stream failed")
		return
	}
	p.log.Debug().Int("containers", len(p.cache)).Msg("docker: synced without an event stream")
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
	p.setState(StateConnected, nil)
	p.log.Info().Msgf("docker: connected to the engine at %s", p.host)
	p.publish(sink, !p.everSent)
	return lost, p.follow(ctx, sink, st, stable)
}

// ping asks the engine whether it answers, within CallTimeout. A refusal
// (a 4xx status, e.g. from a socket proxy that does not allow /_ping) is
// an answer in time, which is all the ping asks for.
func (p *Provider) ping(ctx context.Context) error {
	err := bounded(ctx, p.opts.CallTimeout, func(ctx context.Context) error {
		_, err := p.eng.Ping(ctx)
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
		msgs, errs := p.eng.Events(sctx, events.ListOptions{Filters: eventFilters()})
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
			if changed && win.change() {
				p.publish(sink, false)
			}
		case <-win.c:
			if win.expired() {
				p.publish(sink, false)
			}
		case <-resync.C():
			if err := p.fullSync(ctx); err != nil {
				return err
			}
			p.log.Debug().Int("containers", len(p.cache)).Msg("docker: periodic resync")
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
func eventFilters() filters.Args {
	f := filters.NewArgs(
		filters.Arg("type", string(events.ContainerEventType)),
		filters.Arg("type", string(events.NetworkEventType)),
	)
	for _, a := range []string{
		"start", "die", "stop", "destroy", "pause", "unpause", "rename",
		"health_status", "health_status: starting", "health_status: healthy", "health_status: unhealthy",
		"connect", "disconnect",
	} {
		f.Add("event", a)
	}
	return f
}

// fullSync replaces the cache with a fresh list + inspect, and re-detects
// Levee's own container. Each call has its own deadline.
func (p *Provider) fullSync(ctx context.Context) error {
	cache, err := listFacts(ctx, p.eng, p.opts.CallTimeout)
	if err != nil {
		return err
	}
	p.cache = cache
	return p.detectOwn(ctx)
}

// detectOwn finds the container Levee runs in, by its ID from mountinfo or
// by its host name (Docker sets it to the short ID, and inspect accepts an ID
// prefix). Neither matching a container (Levee not in a container) leaves
// OwnNetworks empty.
func (p *Provider) detectOwn(ctx context.Context) error {
	p.ownID, p.own = "", nil
	var info container.InspectResponse
	found := false
	for _, candidate := range []string{p.opts.SelfID, p.opts.Hostname} {
		if candidate == "" {
			continue
		}
		var err error
		info, err = inspect(ctx, p.eng, p.opts.CallTimeout, candidate)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return fmt.Errorf("own container: %w", err)
		}
		if strings.HasPrefix(info.ID, candidate) {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	p.ownID = info.ID
	if info.NetworkSettings != nil {
		for name := range info.NetworkSettings.Networks {
			p.own = append(p.own, name)
		}
		sort.Strings(p.own)
	}
	return nil
}

// apply updates the cache for one event and reports whether anything
// changed. An error means the engine failed and a resync is due.
func (p *Provider) apply(ctx context.Context, m events.Message) (bool, error) {
	action, _, _ := strings.Cut(string(m.Action), ":")
	switch m.Type {
	case events.ContainerEventType:
		switch action {
		case "die", "stop", "destroy", "pause":
			return p.remove(m.Actor.ID), nil
		case "start", "unpause", "health_status", "rename":
			return p.refresh(ctx, m.Actor.ID)
		}
	case events.NetworkEventType:
		if action != "connect" && action != "disconnect" {
			return false, nil
		}
		id := m.Actor.Attributes["container"]
		if id == "" {
			return false, nil
		}
		ownChanged := false
		if id == p.ownID {
			before := p.own
			if err := p.detectOwn(ctx); err != nil {
				return false, err
			}
			ownChanged = !reflect.DeepEqual(before, p.own)
		}
		changed, err := p.refresh(ctx, id)
		return changed || ownChanged, err
	}
	return false, nil
}

func (p *Provider) remove(id string) bool {
	if _, ok := p.cache[id]; !ok {
		return false
	}
	delete(p.cache, id)
	p.log.Debug().Str("container", id).Msg("docker: container gone")
	return true
}

// refresh re-inspects one container and updates its cache entry.
func (p *Provider) refresh(ctx context.Context, id string) (bool, error) {
	info, err := inspect(ctx, p.eng, p.opts.CallTimeout, id)
	if err != nil {
		if isNotFound(err) {
			return p.remove(id), nil
		}
		return false, err
	}
	if !routable(info) {
		return p.remove(info.ID), nil
	}
	c := facts(info)
	if old, ok := p.cache[info.ID]; ok && reflect.DeepEqual(old, c) {
		return false, nil
	}
	p.cache[info.ID] = c
	p.log.Debug().Str("container", c.Name).Str("health", c.Health).Msg("docker: container updated")
	return true, nil
}

// publish parses the whole cache and sends it, unless nothing changed since
// the last update (always forces a send).
func (p *Provider) publish(sink Sink, always bool) {
	cs := sortedFacts(p.cache)
	if !always && p.everSent && reflect.DeepEqual(cs, p.sent) && reflect.DeepEqual(p.own, p.sentOwn) {
		return
	}
	parser := p.opts.Parser
	parser.OwnNetworks = append([]string(nil), p.own...)
	eps, diags := p.opts.Parse(parser, cs)
	sink.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: eps, Diagnostics: diags})
	p.sent, p.sentOwn, p.everSent = cs, p.own, true
	p.synced.Store(true)
	p.log.Debug().Int("containers", len(cs)).Int("entrypoints", len(eps)).Int("diagnostics", len(diags)).
		Msg("docker: update sent")
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// ListContainers lists the routable containers of the engine at host (empty:
// DOCKER_HOST, else the local socket) once, ordered by name, for
// `levee validate`. Each engine call has DefaultCallTimeout.
func ListContainers(ctx context.Context, host string) ([]labels.Container, error) {
	cli, err := newClient(host)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	cache, err := listFacts(ctx, cli, DefaultCallTimeout)
	if err != nil {
		return nil, err
	}
	return sortedFacts(cache), nil
}

// containerIDFromMountinfo returns the container ID found in mount sources
// like /var/lib/docker/containers/<64 hex>/hostname, or "".
func containerIDFromMountinfo(r io.Reader) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "/containers/")
		if i < 0 {
			continue
		}
		rest := line[i+len("/containers/"):]
		if len(rest) > 64 && rest[64] == '/' && isHex(rest[:64]) {
			return rest[:64]
		}
	}
	return ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
