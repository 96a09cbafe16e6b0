package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
)

// Hosts watches several Docker hosts as one source, "docker". Each host is
// its own Provider, with its own connection, watchdog, backoff, call
// deadlines, status and metrics (host=<name>); their container sets are
// joined and parsed together, so that replicas of one service on several
// hosts form one balanced route, each backend naming its host.
//
// A host is local when Levee's own container runs on it, or when Levee runs
// outside any container and the host's engine is on a socket of this
// machine (and no address is given for it: a forwarded socket): its
// containers are dialled at their own addresses, as with one host. Every
// other host is remote: see labels.Container.Remote.
//
// A host whose engine stops answering keeps its containers in the routes
// while only its event stream is being re-opened; once an attempt to
// reconnect fails, they are taken out (W086) until its next full sync.
type Hosts struct {
	provs []*Provider
	set   *hostSet
}

// NewHosts makes one Provider per host from opts (its Host, TLSDir and
// HostName are each host's). Swarm mode watches one engine only.
func NewHosts(opts Options, specs []HostSpec) (*Hosts, error) {
	return newHosts(opts, specs, New)
}

// newHosts is NewHosts with each host's provider made by build.
func newHosts(opts Options, specs []HostSpec, build func(Options) (*Provider, error)) (*Hosts, error) {
	if opts.Swarm {
		return nil, errors.New("swarm mode watches one Docker host: give one --docker-host")
	}
	opts = withDefaults(opts)
	set := &hostSet{parser: opts.Parser, parse: opts.Parse, byName: map[string]*hostView{}}
	h := &Hosts{set: set}
	for _, s := range specs {
		o := opts
		o.Host, o.TLSDir, o.HostName = s.URL, s.TLSDir, s.Name
		o.Logger = opts.Logger.With().Str("docker_host_name", s.Name).Logger()
		p, err := build(o)
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("docker host %s: %w", s.Name, err)
		}
		p.hosts = set
		set.add(s)
		h.provs = append(h.provs, p)
	}
	return h, nil
}

// Providers are the hosts' providers, in the order given.
func (h *Hosts) Providers() []*Provider { return h.provs }

// HostName is the name of the host a Provider made by NewHosts watches.
func (p *Provider) HostName() string { return p.opts.HostName }

// Settled reports whether the host's set is known: its first full sync
// reached the sink, or an attempt to reach it failed and it counts as
// having no containers (W086). One host down does not hold the others'
// readiness back.
func (p *Provider) Settled() bool { return p.synced.Load() || p.judged.Load() }

// Run runs every host's provider until ctx ends; the joined set goes to
// sink as the source "docker".
func (h *Hosts) Run(ctx context.Context, sink Sink) error {
	h.set.mu.Lock()
	h.set.sink = sink
	h.set.mu.Unlock()
	var wg sync.WaitGroup
	errs := make([]error, len(h.provs))
	for i, p := range h.provs {
		wg.Go(func() { errs[i] = p.Run(ctx, sink) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close releases every host's engine client; call it after Run returned.
func (h *Hosts) Close() error {
	var errs []error
	for _, p := range h.provs {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// hostFacts is what one host's provider knows: its routable containers
// and Levee's own container on it, if there.
type hostFacts struct {
	containers []labels.Container
	own        []string
	ownNetIDs  []string
	ownFound   bool
}

// hostView is one host as the joined set sees it.
type hostView struct {
	spec  HostSpec
	facts hostFacts
	// lostErr, when set, took the host's containers out.
	lostErr error
}

// hostSet joins the hosts' container sets; each change parses the union
// and sends it, under mu, so that updates reach the sink in order.
type hostSet struct {
	parser labels.Parser
	parse  ParseFunc

	mu     sync.Mutex
	sink   Sink
	order  []string
	byName map[string]*hostView
}

func (s *hostSet) add(spec HostSpec) {
	s.order = append(s.order, spec.Name)
	s.byName[spec.Name] = &hostView{spec: spec}
}

// update records host's full current set (its connection is good).
func (s *hostSet) update(host string, f hostFacts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.byName[host]
	v.facts, v.lostErr = f, nil
	s.publish()
}

// lost takes host's containers out: an attempt to reach its engine failed.
func (s *hostSet) lost(host string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.byName[host]
	if v.lostErr != nil && len(v.facts.containers) == 0 {
		v.lostErr = err
		return // nothing more to take out; the diagnostic stands
	}
	v.facts, v.lostErr = hostFacts{}, err
	s.publish()
}

// publish parses the union and sends it; called with mu held.
func (s *hostSet) publish() {
	if s.sink == nil {
		return
	}
	cs, parser := s.join()
	eps, diags := s.parse(parser, cs)
	for _, name := range s.order {
		if v := s.byName[name]; v.lostErr != nil {
			diags = append(diags, hostLost(v))
		}
	}
	diagnostics.Sort(diags)
	s.sink.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: eps, Diagnostics: diags})
}

// join tags each host's containers with the host and how it is reached,
// and returns them with the parser for the union: Levee's own networks are
// those of the first host where its container was found.
func (s *hostSet) join() ([]labels.Container, labels.Parser) {
	parser := s.parser
	parser.Source = config.SourceDocker
	own := ""
	for _, name := range s.order {
		if f := s.byName[name].facts; f.ownFound {
			own = name
			parser.OwnNetworks = append([]string(nil), f.own...)
			parser.OwnNetworkIDs = append([]string(nil), f.ownNetIDs...)
			break
		}
	}
	parser.OnHost = own == ""
	var out []labels.Container
	for _, name := range s.order {
		v := s.byName[name]
		remote := name != own && (v.spec.Addr != "" || !(own == "" && isSocket(v.spec.URL)))
		addr := v.spec.Addr
		if addr == "" {
			addr = hostAddress(v.spec.URL)
		}
		for _, c := range v.facts.containers {
			c.Host, c.Remote, c.HostAddr, c.HostWeight = name, remote, addr, v.spec.Weight
			out = append(out, c)
		}
	}
	return out, parser
}

// hostLost is the W086 of a host whose containers were taken out.
func hostLost(v *hostView) diagnostics.Diagnostic {
	src := diagnostics.Source{Provider: config.SourceDocker, ObjectID: v.spec.URL, ObjectName: "host " + v.spec.Name}
	return diagnostics.New(diagnostics.DockerHostLost, src, "", "", "no backends from "+v.spec.Name,
		fmt.Sprintf("the Docker host %s (%s) is not reachable: %v; its containers are taken out of the routes until it answers again", v.spec.Name, v.spec.URL, v.lostErr),
		"")
}

// JoinHosts tags each host's containers (lists[i] of specs[i]) as the
// provider of several hosts does before it parses their union: each names
// its host, and a remote host's containers are reached at the host's
// address and their published ports. Levee's own container is not looked
// for (`levee validate` runs outside it), so a host on a socket of this
// machine without an address is local.
func JoinHosts(specs []HostSpec, lists [][]labels.Container) []labels.Container {
	set := &hostSet{byName: map[string]*hostView{}}
	for i, s := range specs {
		set.add(s)
		if i < len(lists) {
			set.byName[s.Name].facts = hostFacts{containers: lists[i]}
		}
	}
	cs, _ := set.join()
	return cs
}
