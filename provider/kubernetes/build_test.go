package kubernetes

import (
	"context"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// onlyDiagnostic is the update's one diagnostic, with the route it is
// about kept without backends (so it answers 503 no-healthy-backend
// rather than disappearing).
func onlyDiagnostic(t *testing.T, u config.SourceUpdate) diagnostics.Diagnostic {
	t.Helper()
	if len(u.Entrypoints) != 1 || len(u.Entrypoints[0].Backends) != 0 || u.Entrypoints[0].Path != "/api" {
		t.Fatalf("entrypoints = %+v, want the route /api kept without backends", u.Entrypoints)
	}
	if len(u.Diagnostics) != 1 {
		t.Fatalf("diagnostics = %v, want one", u.Diagnostics)
	}
	return u.Diagnostics[0]
}

// checkNames: the diagnostic names the Ingress, the path and the Service.
func checkNames(t *testing.T, d diagnostics.Diagnostic, want ...string) {
	t.Helper()
	if d.Source.Provider != config.SourceKubernetes || d.Source.ObjectName != "shop/web" || d.Source.Service != "shop-web-0@kubernetes" {
		t.Errorf("source = %+v, want the Ingress shop/web and its route", d.Source)
	}
	if d.Fallback != "503 no-healthy-backend" || d.Severity != diagnostics.Warn {
		t.Errorf("fallback %q severity %s", d.Fallback, d.Severity)
	}
	for _, w := range append([]string{"Ingress shop/web", "path shop.example.com/api"}, want...) {
		if !strings.Contains(d.Message, w) {
			t.Errorf("message %q does not say %q", d.Message, w)
		}
	}
}

func TestBackendServiceNotFound(t *testing.T) {
	_, s := start(t, ingress("levee", "shop.example.com", nil))
	d := onlyDiagnostic(t, s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true }))
	if d.Code != diagnostics.IngressBackendNotFound || d.Key != "spec.rules[0].http.paths[0].backend.service.name" || d.Value != "app" {
		t.Fatalf("diagnostic = %+v", d)
	}
	checkNames(t, d, "Service shop/app not found")
}

func TestBackendServicePortNotFound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		port     networkingv1.ServiceBackendPort
		key, val string
	}{
		{"by name", networkingv1.ServiceBackendPort{Name: "grpc"}, "spec.rules[0].http.paths[0].backend.service.port.name", "grpc"},
		{"by number", networkingv1.ServiceBackendPort{Number: 8080}, "spec.rules[0].http.paths[0].backend.service.port.number", "8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ing := ingress("levee", "shop.example.com", nil)
			ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port = tc.port
			_, s := start(t, ing, service(), slice(false))
			d := onlyDiagnostic(t, s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true }))
			if d.Code != diagnostics.IngressBackendNotFound || d.Key != tc.key || d.Value != tc.val {
				t.Fatalf("diagnostic = %+v", d)
			}
			checkNames(t, d, "Service shop/app has no port "+tc.val)
			if !strings.Contains(d.Hint, "80 (http)") {
				t.Errorf("hint %q does not list the Service's ports", d.Hint)
			}
		})
	}
}

// A Service without ready endpoints is W011 until one is ready; then the
// diagnostic goes and the route gets the backend.
func TestBackendServiceWithoutReadyEndpoints(t *testing.T) {
	notReady := slice(true)
	notReady.Endpoints = notReady.Endpoints[1:]
	client, s := start(t, ingress("levee", "shop.example.com", nil), service(), notReady)
	d := onlyDiagnostic(t, s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true }))
	if d.Code != diagnostics.IngressBackendNoEndpoints || d.Key != "spec.rules[0].http.paths[0].backend.service.name" || d.Value != "shop/app:http" {
		t.Fatalf("diagnostic = %+v", d)
	}
	checkNames(t, d, "Service shop/app has no ready endpoint at port http")

	if _, err := client.DiscoveryV1().EndpointSlices("shop").Update(context.Background(), slice(false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u := s.waitFor(t, "two backends", func(u config.SourceUpdate) bool {
		return len(u.Entrypoints) == 1 && len(u.Entrypoints[0].Backends) == 2
	})
	if len(u.Diagnostics) != 0 {
		t.Fatalf("diagnostics = %v once endpoints are ready", u.Diagnostics)
	}
}

// A Service with no EndpointSlice at all is the same W011.
func TestBackendServiceWithoutEndpointSlices(t *testing.T) {
	_, s := start(t, ingress("levee", "shop.example.com", nil), service())
	d := onlyDiagnostic(t, s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true }))
	if d.Code != diagnostics.IngressBackendNoEndpoints {
		t.Fatalf("diagnostic = %+v", d)
	}
}
