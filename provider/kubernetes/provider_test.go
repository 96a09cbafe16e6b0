package kubernetes

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

type sink struct {
	mu   sync.Mutex
	last config.SourceUpdate
	n    int
}

func (s *sink) Update(u config.SourceUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.n = u, s.n+1
}

// waitFor polls the sink until ok holds of its last update, or fails.
func (s *sink) waitFor(t *testing.T, what string, ok func(config.SourceUpdate) bool) config.SourceUpdate {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		u, n := s.last, s.n
		s.mu.Unlock()
		if n > 0 && ok(u) {
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; last update %+v", what, u)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

func ingress(class, host string, annotations map[string]string) *networkingv1.Ingress {
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: annotations},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr(class),
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/api", PathType: ptr(networkingv1.PathTypePrefix),
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}},
			}}}},
		},
	}
}

func service() *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
}

func slice(terminating bool) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: "app-x1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080))}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true), Serving: ptr(true), Terminating: ptr(false)}},
			{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(!terminating), Serving: ptr(true), Terminating: ptr(terminating)}},
		},
	}
}

func start(t *testing.T, objs ...any) (*fake.Clientset, *sink) {
	t.Helper()
	client := clientWith(t, objs...)
	_, s := runProvider(t, Options{Client: client})
	return client, s
}

// clientWith is a fake clientset holding objs.
func clientWith(t *testing.T, objs ...any) *fake.Clientset {
	t.Helper()
	client := fake.NewClientset()
	ctx := context.Background()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *networkingv1.Ingress:
			_, err = client.NetworkingV1().Ingresses(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			_, err = client.CoreV1().Services(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *discoveryv1.EndpointSlice:
			_, err = client.DiscoveryV1().EndpointSlices(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return client
}

// runProvider runs a provider with opts until the test ends.
func runProvider(t *testing.T, opts Options) (*Provider, *sink) {
	t.Helper()
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s := &sink{}
	go func() { defer close(done); _ = p.Run(runCtx, s) }()
	t.Cleanup(func() { cancel(); <-done })
	return p, s
}

func addrs(ep config.Entrypoint) []string {
	var out []string
	for _, b := range ep.Backends {
		out = append(out, b.Address)
	}
	return out
}

func TestIngressRouteAndBackends(t *testing.T) {
	_, s := start(t, ingress("levee", "Shop.Example.com", nil), service(), slice(false))
	u := s.waitFor(t, "one route", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 1 })
	ep := u.Entrypoints[0]
	if ep.ID != "shop-web-0@kubernetes" || ep.Source != config.SourceKubernetes || ep.Path != "/api" {
		t.Fatalf("route = %s %s %s", ep.ID, ep.Source, ep.Path)
	}
	if len(ep.Hosts) != 1 || ep.Hosts[0] != "shop.example.com" {
		t.Fatalf("hosts = %v", ep.Hosts)
	}
	if len(ep.Backends) != 2 || ep.Backends[0].Address != "10.0.0.1" || ep.Backends[0].Port != 8080 || ep.Backends[1].Address != "10.0.0.2" {
		t.Fatalf("backends = %+v", ep.Backends)
	}
}

func TestTerminatingEndpointLeavesRotation(t *testing.T) {
	client, s := start(t, ingress("levee", "shop.example.com", nil), service(), slice(false))
	s.waitFor(t, "two backends", func(u config.SourceUpdate) bool {
		return len(u.Entrypoints) == 1 && len(u.Entrypoints[0].Backends) == 2
	})
	if _, err := client.DiscoveryV1().EndpointSlices("shop").Update(context.Background(), slice(true), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := s.waitFor(t, "one backend", func(u config.SourceUpdate) bool {
		return len(u.Entrypoints) == 1 && len(u.Entrypoints[0].Backends) == 1
	})
	if got := addrs(u.Entrypoints[0]); got[0] != "10.0.0.1" {
		t.Fatalf("backends = %v", got)
	}
}

func TestBadAnnotationDiagnosticWithDefault(t *testing.T) {
	_, s := start(t, ingress("levee", "shop.example.com", map[string]string{"levee.io/circuitBreaker.threshold": "lots"}), service(), slice(false))
	u := s.waitFor(t, "a route and a diagnostic", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 1 && len(u.Diagnostics) > 0 })
	var found bool
	for _, d := range u.Diagnostics {
		if d.Key == "levee.io/circuitBreaker.threshold" && d.Severity == diagnostics.Warn && d.Source.Provider == config.SourceKubernetes {
			found = true
		}
	}
	if !found {
		t.Fatalf("no warning for the annotation: %v", u.Diagnostics)
	}
	if cb := u.Entrypoints[0].CircuitBreaker; cb == nil || cb.Params.Threshold != 0.5 {
		t.Fatalf("breaker = %+v, want the default threshold 0.5", cb)
	}
}

func TestOtherIngressClassIgnored(t *testing.T) {
	_, s := start(t, ingress("nginx", "shop.example.com", nil), service(), slice(false))
	u := s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true })
	if len(u.Entrypoints) != 0 || len(u.Diagnostics) != 0 {
		t.Fatalf("update = %+v", u)
	}
}

func TestRuleWithoutHostIsDiagnosed(t *testing.T) {
	_, s := start(t, ingress("levee", "", nil), service(), slice(false))
	u := s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true })
	if len(u.Entrypoints) != 0 || len(u.Diagnostics) != 1 || u.Diagnostics[0].Code != diagnostics.IngressRuleNoHost {
		t.Fatalf("update = %+v", u)
	}
}

func TestDeletedIngressRemovesRoute(t *testing.T) {
	client, s := start(t, ingress("levee", "shop.example.com", nil), service(), slice(false))
	s.waitFor(t, "one route", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 1 })
	if err := client.NetworkingV1().Ingresses("shop").Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitFor(t, "no route", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 0 })
}
