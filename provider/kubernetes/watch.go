package kubernetes

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// resource is one kind the provider watches, in one namespace.
type resource struct {
	// name is "<namespace>/<resource>" ("*/ingresses" for every
	// namespace), as the log lines and the status name the informer.
	name    string
	example runtime.Object
	list    func(context.Context, metav1.ListOptions) (runtime.Object, error)
	watch   func(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// resources are the Ingresses, Services and EndpointSlices of ns.
func resources(client kubernetes.Interface, ns string) (ing, svc, eps resource) {
	label := ns
	if label == metav1.NamespaceAll {
		label = "*"
	}
	ings, svcs, slices := client.NetworkingV1().Ingresses(ns), client.CoreV1().Services(ns), client.DiscoveryV1().EndpointSlices(ns)
	ing = resource{name: label + "/ingresses", example: &networkingv1.Ingress{},
		list:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return ings.List(ctx, o) },
		watch: ings.Watch}
	svc = resource{name: label + "/services", example: &corev1.Service{},
		list:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return svcs.List(ctx, o) },
		watch: svcs.Watch}
	eps = resource{name: label + "/endpointslices", example: &discoveryv1.EndpointSlice{},
		list:  func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return slices.List(ctx, o) },
		watch: slices.Watch}
	return ing, svc, eps
}

// informer is a shared informer of r whose requests report to c: a failed
// list or watch request is a failure, an opened watch the end of one, and
// a watch that ends with an error event (410 Gone) a relist, as is a
// request answered 410 itself (see requestFailed). client-go's
// reflector retries each failure with its backoff (800 ms doubling to 30
// s); conn reports them, rate-limited, instead of client-go's own log line
// per retry (the informer runs with a discarding klog logger, see run).
func informer(client kubernetes.Interface, r resource, resync time.Duration, c *conn) (cache.SharedIndexInformer, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			obj, err := r.list(ctx, o)
			if err != nil && ctx.Err() == nil {
				c.requestFailed(r.name, err)
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			w, err := r.watch(ctx, o)
			switch {
			case ctx.Err() != nil:
			case err != nil:
				// A streamed initial list that fails is retried at once as a
				// plain list (an API server without it), which reports.
				if o.SendInitialEvents == nil || !*o.SendInitialEvents {
					c.requestFailed(r.name, err)
				}
			default:
				c.watching(r.name)
				w = reportEnd(w, func(err error) { c.watchEnded(r.name, err) })
			}
			return w, err
		},
	}
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), r.example, resync, cache.Indexers{})
	// The requests report through the ListWatch (the handler alone would
	// miss the watch retries client-go makes without it, the error events
	// of a watch and the end of an outage); the default handler would log
	// every retry.
	handler := func(_ context.Context, _ *cache.Reflector, err error) {
		c.log.Debug().Err(err).Str("informer", r.name).Msg("kubernetes provider: list and watch ended; retrying")
	}
	if err := inf.SetWatchErrorHandlerWithContext(handler); err != nil {
		return nil, err
	}
	return inf, nil
}

// requestFailed reports a list or watch request that failed with err. A
// 410 Gone (the resource version asked for was compacted away, or a list's
// continue token expired) is no failure of the API server: client-go lists
// again at once from the latest resource version, a routine relist.
func (c *conn) requestFailed(informer string, err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		c.watchEnded(informer, err)
		return
	}
	c.failed(informer, err)
}

// run runs inf until ctx ends, with client-go's own log lines discarded:
// conn logs what they would say, once per outage.
func run(ctx context.Context, inf cache.SharedIndexInformer) {
	inf.RunWithContext(klog.NewContext(ctx, logr.Discard()))
}

// endReporter passes a watch's events on, calling ended with the error an
// error event carries (the reflector ends the watch on one and lists
// again). Unlike watch.Filter, its copier gives up when Stop is called, so
// a watch stopped with an event in flight leaves no goroutine behind.
type endReporter struct {
	inner  watch.Interface
	result chan watch.Event
	done   chan struct{}
	stop   sync.Once
}

func reportEnd(inner watch.Interface, ended func(error)) watch.Interface {
	w := &endReporter{inner: inner, result: make(chan watch.Event), done: make(chan struct{})}
	go func() {
		defer close(w.result)
		for e := range inner.ResultChan() {
			if e.Type == watch.Error {
				ended(apierrors.FromObject(e.Object))
			}
			select {
			case w.result <- e:
			case <-w.done:
				return
			}
		}
	}()
	return w
}

func (w *endReporter) ResultChan() <-chan watch.Event { return w.result }

func (w *endReporter) Stop() {
	w.stop.Do(func() { close(w.done) })
	w.inner.Stop()
}
