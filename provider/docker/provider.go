package docker

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	cerrdefs "github.com/containerd/errdefs"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/rs/zerolog"
)

// Defaults for Options.
const (
	DefaultDebounce       = 100 * time.Millisecond
	DefaultResyncInterval = 5 * time.Minute
)

// callTimeout bounds one list or inspect call, so a hung engine turns into
// a reconnect rather than a stuck provider.
const callTimeout = 30 * time.Second

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
	// ResyncInterval is the period of the safety-net full resync (default 5 min).
	ResyncInterval time.Duration
	// RetryMin and RetryMax bound the reconnect backoff (default 250 ms, 30 s).
	RetryMin, RetryMax time.Duration
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
// the first full sync has been delivered.
type Provider struct {
	opts   Options
	eng    engine
	closer func() error
	log    zerolog.Logger
	synced atomic.Bool

	// The fields below belong to the Run goroutine.
	cache    map[string]labels.Container
	ownID    string
	own      []string
	sent     []labels.Container
	sentOwn  []string
	everSent bool
}

// New makes a Provider for opts.Host. It does not contact the engine: Run
// does, and keeps trying.
func New(opts Options) (*Provider, error) {
	cli, err := newClient(opts.Host)
	if err != nil {
		return nil, err
	}
	p := newProvider(opts, cli)
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

func newProvider(opts Options, eng engine) *Provider {
	if opts.Parse == nil {
		opts.Parse = labels.Parser.Parse
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.ResyncInterval <= 0 {
		opts.ResyncInterval = DefaultResyncInterval
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
	return &Provider{
		opts:  opts,
		eng:   eng,
		log:   opts.Logger.With().Str("provider", config.SourceDocker).Str("docker_host", eng.DaemonHost()).Logger(),
		cache: map[string]labels.Container{},
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

// Run watches the engine and sends sink every change until ctx ends; it
// then returns nil. It never gives up on an unreachable engine. Run must not
// be called twice at once.
func (p *Provider) Run(ctx context.Context, sink Sink) error {
	host := p.eng.DaemonHost()
	bo := newBackoff(p.opts.RetryMin, p.opts.RetryMax)
	// announced is set once an outage has been logged at error/warn level,
	// so retries stay at debug until the engine is back.
	announced := false
	for {
		connected, err := p.session(ctx, sink, func() {
			bo.reset()
			p.log.Info().Msgf("docker: connected to the engine at %s", host)
			announced = false
		})
		if ctx.Err() != nil {
			return nil
		}
		delay := bo.delay()
		switch {
		case connected:
			p.log.Warn().Err(err).Dur("retry_in", delay).
				Msgf("docker: lost the connection to the engine at %s; reconnecting and resyncing", host)
			announced = true
		case !announced:
			p.log.Error().Err(err).Dur("retry_in", delay).
				Msgf("docker: cannot reach the Docker engine at %s; other sources keep serving, retrying in the background", host)
			announced = true
		default:
			p.log.Debug().Err(err).Dur("retry_in", delay).Msgf("docker: engine at %s still unreachable", host)
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

// session is one connection: subscribe, full sync, then follow events until
// the stream fails. connected is true once the full sync succeeded.
func (p *Provider) session(ctx context.Context, sink Sink, onConnect func()) (connected bool, err error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Subscribe before listing, so nothing that happens during the list is
	// missed; events about containers already listed are harmless.
	msgs, errs := p.eng.Events(sctx, events.ListOptions{Filters: eventFilters()})
	if err := p.fullSync(sctx); err != nil {
		return false, err
	}
	onConnect()
	p.publish(sink, !p.everSent)

	resync := p.opts.Clock.NewTimer(p.opts.ResyncInterval)
	defer func() { resync.Stop() }()
	// A change after a quiet period is published at once, so a lone
	// `docker start` is routed without waiting. Changes that follow within
	// the Debounce window after a publish are collected and published
	// together when it ends, so a burst costs one rebuild per window.
	var window Timer
	var windowC <-chan time.Time
	dirty := false
	openWindow := func() {
		window = p.opts.Clock.NewTimer(p.opts.Debounce)
		windowC = window.C()
	}
	defer func() {
		if window != nil {
			window.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return true, ctx.Err()
		case err := <-errs:
			if err == nil {
				err = errors.New("event stream closed")
			}
			return true, fmt.Errorf("event stream from %s: %w", p.eng.DaemonHost(), err)
		case m, ok := <-msgs:
			if !ok {
				return true, fmt.Errorf("event stream from %s: closed", p.eng.DaemonHost())
			}
			changed, err := p.apply(sctx, m)
			if err != nil {
				return true, err
			}
			switch {
			case !changed:
			case windowC == nil:
				p.publish(sink, false)
				openWindow()
			default:
				dirty = true
			}
		case <-windowC:
			window, windowC = nil, nil
			if dirty {
				dirty = false
				p.publish(sink, false)
				openWindow()
			}
		case <-resync.C():
			if err := p.fullSync(sctx); err != nil {
				return true, err
			}
			p.log.Debug().Int("containers", len(p.cache)).Msg("docker: periodic resync")
			// The resync publishes everything collected so far.
			dirty = false
			p.publish(sink, false)
			resync = p.opts.Clock.NewTimer(p.opts.ResyncInterval)
		}
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
// Levee's own container.
func (p *Provider) fullSync(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cache, err := listFacts(cctx, p.eng)
	if err != nil {
		return err
	}
	p.cache = cache
	return p.detectOwn(cctx)
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
		info, err = p.eng.ContainerInspect(ctx, candidate)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return fmt.Errorf("inspect own container %q at %s: %w", candidate, p.eng.DaemonHost(), err)
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
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			err := p.detectOwn(cctx)
			cancel()
			if err != nil {
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
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	info, err := p.eng.ContainerInspect(cctx, id)
	if err != nil {
		if isNotFound(err) {
			return p.remove(id), nil
		}
		return false, fmt.Errorf("inspect container %s at %s: %w", id, p.eng.DaemonHost(), err)
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
// `levee validate`.
func ListContainers(ctx context.Context, host string) ([]labels.Container, error) {
	cli, err := newClient(host)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	cache, err := listFacts(ctx, cli)
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
