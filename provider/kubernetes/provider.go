// Package kubernetes is the Kubernetes provider: it routes the
// networking.k8s.io/v1 Ingress objects of one ingress class to the ready
// endpoints of their Services (docs/kubernetes.md), and a default backend
// to the paths no rule matches on the rules' hosts. A path whose Service,
// port or endpoints are missing, or whose backend is not a Service, stays
// a route, without backends, with a diagnostic saying which (W008, W011,
// W020). Its hold on the API server
// (Status, the levee_provider_* series) is read off the informers' own
// list and watch requests; while they fail the caches keep their last
// content, and so the routes.
package kubernetes

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/router/config"
)

// Defaults of Options.
const (
	DefaultIngressClass = "levee"
	DefaultResync       = 5 * time.Minute
)

// Sink receives the provider's complete current output.
type Sink interface {
	Update(config.SourceUpdate)
}

// Options configure a Provider.
type Options struct {
	// Client is the API server's client.
	Client kubernetes.Interface
	// IngressClass is the spec.ingressClassName of the Ingresses routed
	// (default "levee").
	IngressClass string
	// Namespaces are those watched; none means every namespace.
	Namespaces []string
	// Resync is the informers' full resync period (default 5m).
	Resync time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives the provider's own events.
	Logger zerolog.Logger
	// Registerer gets the levee_provider_* series labelled
	// provider="kubernetes" (connected, state, reconnects_total); nil
	// registers none.
	Registerer prometheus.Registerer
}

// Provider watches Ingresses, Services and EndpointSlices and hands the
// sink the routes they make.
type Provider struct {
	opts Options
	log  zerolog.Logger
	conn *conn

	synced atomic.Bool

	sent     config.SourceUpdate
	everSent bool
}

// New checks the options and registers the metrics.
func New(opts Options) (*Provider, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("kubernetes provider: no client")
	}
	if opts.IngressClass == "" {
		opts.IngressClass = DefaultIngressClass
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultResync
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(opts.Namespaces) == 0 {
		opts.Namespaces = []string{metav1.NamespaceAll}
	}
	labels := prometheus.Labels{"provider": config.SourceKubernetes}
	m, err := provider.NewConnectionMetricsLabelled(opts.Registerer, labels)
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider: %w", err)
	}
	r, err := provider.NewReconnects(opts.Registerer, labels)
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider: %w", err)
	}
	return &Provider{opts: opts, log: opts.Logger, conn: newConn(opts.Now, opts.Logger, m, r)}, nil
}

// Synced reports whether the first full read has reached the sink.
func (p *Provider) Synced() bool { return p.synced.Load() }

// Status reports the provider's state; safe from any goroutine.
func (p *Provider) Status() Status { return p.conn.Status() }

// listers are one namespace's (or every namespace's) caches.
type listers struct {
	ingresses cache.SharedIndexInformer
	services  cache.SharedIndexInformer
	slices    cache.SharedIndexInformer
}

// Run starts the informers and, once their caches synced and after every
// change, hands the sink the routes until ctx ends. A failing API server
// does not end it: the informers retry, Status says so, and the routes
// last sent stay.
func (p *Provider) Run(ctx context.Context, sink Sink) error {
	defer p.conn.stopped()
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	var all []listers
	var infs []cache.SharedIndexInformer
	for _, ns := range p.opts.Namespaces {
		var l listers
		ing, svc, eps := resources(p.opts.Client, ns)
		for _, x := range []struct {
			r  resource
			to *cache.SharedIndexInformer
		}{{ing, &l.ingresses}, {svc, &l.services}, {eps, &l.slices}} {
			inf, err := informer(p.opts.Client, x.r, p.opts.Resync, p.conn)
			if err != nil {
				return fmt.Errorf("kubernetes provider: informer of %s: %w", x.r.name, err)
			}
			if _, err := inf.AddEventHandler(handler); err != nil {
				return fmt.Errorf("kubernetes provider: event handler of %s: %w", x.r.name, err)
			}
			*x.to = inf
			infs = append(infs, inf)
		}
		all = append(all, l)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	syncs := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		wg.Add(1)
		go func() { defer wg.Done(); run(ctx, inf) }()
		syncs = append(syncs, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), syncs...) {
		return nil
	}
	p.conn.cachesSynced()
	p.send(sink, all)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			p.send(sink, all)
		}
	}
}

// send builds the routes from the caches and sends them when they changed
// (the first time always).
func (p *Provider) send(sink Sink, all []listers) {
	var st store
	for _, l := range all {
		for _, o := range l.ingresses.GetStore().List() {
			if ing, ok := o.(*networkingv1.Ingress); ok {
				st.ingresses = append(st.ingresses, ing)
			}
		}
		for _, o := range l.services.GetStore().List() {
			if s, ok := o.(*corev1.Service); ok {
				st.services = append(st.services, s)
			}
		}
		for _, o := range l.slices.GetStore().List() {
			if s, ok := o.(*discoveryv1.EndpointSlice); ok {
				st.slices = append(st.slices, s)
			}
		}
	}
	eps, diags := build(st, p.opts.IngressClass)
	u := config.SourceUpdate{Source: config.SourceKubernetes, Entrypoints: eps, Diagnostics: diags}
	if p.everSent && reflect.DeepEqual(u, p.sent) {
		return
	}
	sink.Update(u)
	p.sent, p.everSent = u, true
	p.synced.Store(true)
	p.log.Debug().Int("entrypoints", len(eps)).Int("diagnostics", len(diags)).Msg("kubernetes provider: update sent")
}
