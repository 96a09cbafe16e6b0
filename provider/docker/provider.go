package docker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"
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
// is labels.Parser.Parse. The parser carries OwnNetworks and OnHost as
// detected.
type ParseFunc func(p labels.Parser, containers []labels.Container) ([]config.Entrypoint, []diagnostics.Diagnostic)

// Options configure a Provider. The zero value watches the engine named by
// the environment (DOCKER_HOST, else the local socket) with the defaults.
type Options struct {
	// Host is the engine address, e.g. "unix:///var/run/docker.sock" or
	// "tcp://127.0.0.1:2375". Empty means DOCKER_HOST, else the local socket.
	Host string
	// HostName names the host when Levee watches several (NewHosts sets
	// it): its metrics carry host=<name>, its log lines docker_host_name.
	HostName string
	// TLSDir holds the engine's TLS client certificates in the Docker
	// CLI's DOCKER_CERT_PATH layout (ca.pem, cert.pem, key.pem); empty
	// means DOCKER_CERT_PATH/DOCKER_TLS_VERIFY as the environment says.
	TLSDir string
	// Parser is the label grammar; its OwnNetworks and OnHost are filled
	// by the provider.
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

	// Swarm watches the engine's Swarm services instead of its containers
	// (the engine must be a manager): service labels, running tasks as
	// backends. Its entrypoints and diagnostics have the source "swarm".
	Swarm bool
	// SwarmPoll is the period of the swarm re-list while nothing happens
	// (default 5 s): the engine sends no event when a task on another
	// node stops. SwarmSettle is the period after an event and while a
	// labelled service is scaling (default 250 ms).
	SwarmPoll, SwarmSettle time.Duration
}

// Provider watches one Docker Engine. Run drives it; Synced reports whether
// the first full sync has been delivered, Status the connection.
type Provider struct {
	opts  Options
	eng   engine
	swarm swarmEngine
	// name is the source: config.SourceDocker, or SourceSwarm in Swarm
	// mode.
	name   string
	host   string
	closer func() error
	log    zerolog.Logger
	synced atomic.Bool
	// judged is set once a host of several was judged lost (Settled).
	judged  atomic.Bool
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
	ownNetIDs []string
	// hosts, when set, receives the container set instead of the sink:
	// this provider is one of several hosts (hosts.go).
	hosts    *hostSet
	sent     []labels.Container
	sentOwn  []string
	everSent bool
	// Swarm mode: stale is set by an event and cleared by the re-list
	// that follows; settled is false while a labelled service scales;
	// settleUntil ends the close polling that follows an event.
	stale       bool
	settled     bool
	settleUntil time.Time
	// unsettledSince is when settled last became false.
	unsettledSince time.Time
	// gone are tasks whose container was seen stopping, by task ID, with
	// when (see dropGone).
	gone map[string]time.Time
	// urgent: a task left the cache on an event; publish before the
	// re-list.
	urgent bool
	// ports are the host port bindings of the task containers this
	// engine runs (see taskBindings).
	ports portCache
	// stopping holds the containers sent a terminating signal that have
	// not started again or died since (see stopping.go).
	stopping map[string]struct{}
}

// New makes a Provider for opts.Host. It does not contact the engine: Run
// does, and keeps trying.
func New(opts Options) (*Provider, error) {
	cli, err := newClient(opts.Host, opts.TLSDir)
	if err != nil {
		return nil, err
	}
	p, err := newProvider(opts, mobyEngine{cli})
	if err != nil {
		cli.Close()
		return nil, err
	}
	p.closer = cli.Close
	return p, nil
}

func newClient(host, tlsDir string) (*client.Client, error) {
	clientOpts := []client.Opt{client.FromEnv}
	if host != "" {
		clientOpts = append(clientOpts, client.WithHost(host))
	}
	ssh, err := sshOpts(host)
	if err != nil {
		return nil, fmt.Errorf("docker client for host %q: %w", host, err)
	}
	clientOpts = append(clientOpts, ssh...)
	if tlsDir != "" {
		clientOpts = append(clientOpts, client.WithTLSClientConfig(
			filepath.Join(tlsDir, "ca.pem"), filepath.Join(tlsDir, "cert.pem"), filepath.Join(tlsDir, "key.pem")))
	}
	cli, err := client.New(clientOpts...)
	if err != nil {
		return nil, fmt.Errorf("docker client for host %q: %w", host, err)
	}
	return cli, nil
}

func newProvider(opts Options, eng engine) (*Provider, error) {
	opts = withDefaults(opts)
	name := config.SourceDocker
	var se swarmEngine
	if opts.Swarm {
		name = config.SourceSwarm
		var ok bool
		if se, ok = eng.(swarmEngine); !ok {
			return nil, fmt.Errorf("the %s provider needs an engine client with the Swarm API", name)
		}
	}
	m, err := newMetrics(opts.Registerer, name, opts.HostName)
	if err != nil {
		return nil, err
	}
	host := eng.DaemonHost()
	p := &Provider{
		opts:    opts,
		eng:     eng,
		swarm:   se,
		name:    name,
		host:    host,
		log:     opts.Logger.With().Str("provider", name).Str("docker_host", host).Str("docker_host_name", opts.HostName).Logger(),
		metrics: m,
		status:  Status{State: provider.StateConnecting, Since: opts.Clock.Now()},
		cache:   map[string]labels.Container{},
		settled: true,
		gone:    map[string]time.Time{},
		ports:   portCache{},
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
	defaultDuration(&opts.SwarmPoll, DefaultSwarmPoll)
	defaultDuration(&opts.SwarmSettle, DefaultSwarmSettle)
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

// fullSync replaces the cache with a fresh list + inspect, and re-detects
// Levee's own container. Each call has its own deadline.
func (p *Provider) fullSync(ctx context.Context) error {
	if p.swarm != nil {
		return p.swarmSync(ctx)
	}
	cache, err := listFacts(ctx, p.eng, p.opts.CallTimeout, p.opts.Parser.Relevant)
	if err != nil {
		return err
	}
	p.cache = cache
	clear(p.stopping) // the list is the truth after missed events
	return p.detectOwn(ctx)
}

// apply updates the cache for one event and reports whether anything
// changed. An error means the engine failed and a resync is due.
func (p *Provider) apply(ctx context.Context, m events.Message) (bool, error) {
	if p.swarm != nil {
		return p.swarmEvent(m), nil
	}
	action, _, _ := strings.Cut(string(m.Action), ":")
	switch m.Type {
	case events.ContainerEventType:
		switch action {
		case "kill":
			return p.killed(m), nil
		case "die", "destroy":
			delete(p.stopping, m.Actor.ID)
			return p.remove(m.Actor.ID), nil
		case "stop", "pause":
			return p.remove(m.Actor.ID), nil
		case "start", "unpause", "health_status", "rename":
			if action == "start" {
				delete(p.stopping, m.Actor.ID)
			}
			// Container events carry the container's labels as
			// attributes: an unrelated container costs no inspect.
			if _, known := p.cache[m.Actor.ID]; !known && !p.opts.Parser.Relevant(m.Actor.Attributes) {
				return false, nil
			}
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
		// Network events do not carry the container's labels. A
		// container outside the cache is either irrelevant or not
		// running (the cache holds every routable relevant one); its
		// start event will bring it in. Only Levee's own container
		// matters beyond the cache.
		if _, known := p.cache[id]; !known && id != p.ownID {
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
	if p.isStopping(id) {
		return p.remove(id), nil // no inspect: it is on its way out
	}
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
	if p.hosts != nil {
		p.hosts.update(p.opts.HostName, hostFacts{containers: cs, own: p.own, ownNetIDs: p.ownNetIDs, ownFound: p.ownID != ""})
		p.sent, p.sentOwn, p.everSent = cs, p.own, true
		p.synced.Store(true)
		return
	}
	parser := p.opts.Parser
	parser.OwnNetworks = append([]string(nil), p.own...)
	// No container of its own found: Levee runs on the host (a Swarm
	// task's host-mode port is then the way to it).
	parser.OnHost = p.ownID == ""
	parser.Source = p.name
	eps, diags := p.opts.Parse(parser, cs)
	pols, pdiags := parser.ParsePolicies(cs)
	diags = append(diags, pdiags...)
	diagnostics.Sort(diags)
	sink.Update(config.SourceUpdate{Source: p.name, Entrypoints: eps, Diagnostics: diags, Policies: pols})
	p.sent, p.sentOwn, p.everSent = cs, p.own, true
	p.synced.Store(true)
	p.log.Debug().Int("objects", len(cs)).Int("entrypoints", len(eps)).Int("diagnostics", len(diags)).
		Msgf("%s: update sent", p.name)
}

func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// ListContainers lists the routable containers of the engine of spec (an
// empty URL: DOCKER_HOST, else the local socket), with its TLS client
// certificates, once, ordered by name, for `levee validate`. Each engine
// call has DefaultCallTimeout.
func ListContainers(ctx context.Context, spec HostSpec) ([]labels.Container, error) {
	cli, err := newClient(spec.URL, spec.TLSDir)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	// validate reports what it finds under any prefix it is given later,
	// so it inspects every running container; it runs once.
	everything := func(map[string]string) bool { return true }
	cache, err := listFacts(ctx, mobyEngine{cli}, DefaultCallTimeout, everything)
	if err != nil {
		return nil, err
	}
	return sortedFacts(cache), nil
}

// ListServices lists the Swarm services of the engine of spec once,
// ordered by name, each with its running tasks, for `levee validate`. An
// engine that is not a Swarm manager has none: nil, no error. Each engine
// call has DefaultCallTimeout.
func ListServices(ctx context.Context, spec HostSpec) ([]labels.Container, error) {
	host := spec.URL
	cli, err := newClient(host, spec.TLSDir)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	var manager bool
	if err := bounded(ctx, DefaultCallTimeout, func(ctx context.Context) error {
		r, err := cli.Info(ctx, client.InfoOptions{})
		manager = r.Info.Swarm.ControlAvailable
		return err
	}); err != nil {
		return nil, fmt.Errorf("engine info at %s: %w", host, err)
	}
	if !manager {
		return nil, nil
	}
	eng := mobyEngine{cli}
	st, err := listSwarm(ctx, eng, host, DefaultCallTimeout)
	if err != nil {
		return nil, err
	}
	if st.onNode, err = taskBindings(ctx, eng, DefaultCallTimeout, st.tasks, portCache{}); err != nil {
		return nil, err
	}
	cache, _ := swarmFacts(st, "")
	return sortedFacts(cache), nil
}
