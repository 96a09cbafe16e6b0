package kubernetes

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// serviceBackend is a backend to the Service app's port http.
func serviceBackend(name string) *networkingv1.IngressBackend {
	return &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Name: "http"}}}
}

// byHostPath finds the route of host and path, with or without a regex.
func byHostPath(t *testing.T, u config.SourceUpdate, host, path string, regex bool) config.Entrypoint {
	t.Helper()
	for _, ep := range u.Entrypoints {
		if len(ep.Hosts) == 1 && ep.Hosts[0] == host && ep.Path == path && (ep.PathRegex != "") == regex {
			return ep
		}
	}
	t.Fatalf("no route %s%s (regex %v) in %+v", host, path, regex, u.Entrypoints)
	return config.Entrypoint{}
}

// A default backend takes, on each rule host (a host whose rule has no
// http included), every path no rule matches: a route "/" at the lowest
// priority, so that the rules' own paths, and any other route on the host
// and path, win.
func TestDefaultBackendTakesTheRuleHostsOtherPaths(t *testing.T) {
	ing := ingress("levee", "shop.example.com", map[string]string{AnnotationPrefix + "priority": "50"})
	ing.Spec.Rules = append(ing.Spec.Rules, networkingv1.IngressRule{Host: "*.shop.example.com"}, ing.Spec.Rules[0])
	ing.Spec.DefaultBackend = serviceBackend("app")
	_, s := start(t, ing, service(), slice(false))
	u := s.waitFor(t, "the routes", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 4 })
	if len(u.Diagnostics) != 0 {
		t.Fatalf("diagnostics = %v", u.Diagnostics)
	}
	if api := byHostPath(t, u, "shop.example.com", "/api", false); api.Priority != 50 || len(api.Backends) != 2 {
		t.Errorf("rule route = %+v, want priority 50 and two backends", api)
	}
	for _, host := range []string{"shop.example.com", "*.shop.example.com"} {
		def := byHostPath(t, u, host, "/", false)
		if def.Priority != lowestPriority || len(def.Backends) != 2 || def.Backends[0].Port != 8080 || def.Source != config.SourceKubernetes {
			t.Errorf("default route of %s = %+v, want priority %d and the two endpoints of app", host, def, lowestPriority)
		}
	}
}

// A prefix "/" rule leaves the default backend no path on its host; an
// exact "/" rule leaves it the other paths.
func TestDefaultBackendBesideARootPath(t *testing.T) {
	for _, tc := range []struct {
		pathType networkingv1.PathType
		routes   int
	}{{networkingv1.PathTypePrefix, 1}, {networkingv1.PathTypeImplementationSpecific, 1}, {networkingv1.PathTypeExact, 2}} {
		t.Run(string(tc.pathType), func(t *testing.T) {
			ing := ingress("levee", "shop.example.com", nil)
			ing.Spec.Rules[0].HTTP.Paths[0].Path = "/"
			ing.Spec.Rules[0].HTTP.Paths[0].PathType = ptr(tc.pathType)
			ing.Spec.DefaultBackend = serviceBackend("app")
			_, s := start(t, ing, service(), slice(false))
			u := s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true })
			if len(u.Entrypoints) != tc.routes || len(u.Diagnostics) != 0 {
				t.Fatalf("routes %+v diagnostics %v, want %d routes", u.Entrypoints, u.Diagnostics, tc.routes)
			}
			rule := byHostPath(t, u, "shop.example.com", "/", tc.pathType == networkingv1.PathTypeExact)
			if rule.Priority != 0 {
				t.Errorf("rule route priority %d", rule.Priority)
			}
			if tc.routes == 2 && byHostPath(t, u, "shop.example.com", "/", false).Priority != lowestPriority {
				t.Errorf("the default route is not the lowest priority")
			}
		})
	}
}

// A default backend's missing Service, port or endpoints are the rule
// paths' W008 and W011, at spec.defaultBackend; its route stays, without
// backends, so that the host's other paths answer 503.
func TestDefaultBackendDiagnostics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend *networkingv1.IngressBackend
		objs    []any
		code    diagnostics.Code
		key     string
		says    string
	}{
		{"no service", serviceBackend("nope"), nil, diagnostics.IngressBackendNotFound, "spec.defaultBackend.service.name", "Service shop/nope not found"},
		{"no port", &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "app", Port: networkingv1.ServiceBackendPort{Number: 9}}},
			[]any{service(), slice(false)}, diagnostics.IngressBackendNotFound, "spec.defaultBackend.service.port.number", "Service shop/app has no port 9"},
		{"no endpoints", serviceBackend("app"), []any{service()}, diagnostics.IngressBackendNoEndpoints, "spec.defaultBackend.service.name", "no ready endpoint at port http"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ing := ingress("levee", "shop.example.com", nil)
			ing.Spec.Rules[0].HTTP.Paths[0].Backend = *serviceBackend("other")
			ing.Spec.DefaultBackend = tc.backend
			_, s := start(t, append([]any{ing}, tc.objs...)...)
			u := s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true })
			def := byHostPath(t, u, "shop.example.com", "/", false)
			if len(def.Backends) != 0 {
				t.Fatalf("default route %+v has backends", def)
			}
			var got *diagnostics.Diagnostic
			for i, d := range u.Diagnostics {
				if strings.HasPrefix(d.Key, "spec.defaultBackend") {
					got = &u.Diagnostics[i]
				}
			}
			if got == nil || got.Code != tc.code || got.Key != tc.key || got.Source.Service != def.ID || got.Fallback != "503 no-healthy-backend" {
				t.Fatalf("diagnostics = %+v, want %s at %s about %s", u.Diagnostics, tc.code, tc.key, def.ID)
			}
			for _, w := range []string{"Ingress shop/web default backend for shop.example.com", tc.says} {
				if !strings.Contains(got.Message, w) {
					t.Errorf("message %q does not say %q", got.Message, w)
				}
			}
		})
	}
}

// Levee does not route every host: a default backend of an Ingress
// without a rule host is E011, not a route.
func TestDefaultBackendWithoutRuleHost(t *testing.T) {
	ing := ingress("levee", "", nil)
	ing.Spec.Rules = nil
	ing.Spec.DefaultBackend = serviceBackend("app")
	_, s := start(t, ing, service(), slice(false))
	u := s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true })
	if len(u.Entrypoints) != 0 || len(u.Diagnostics) != 1 {
		t.Fatalf("routes %+v diagnostics %v, want no route and one diagnostic", u.Entrypoints, u.Diagnostics)
	}
	if d := u.Diagnostics[0]; d.Code != diagnostics.IngressRuleNoHost || d.Key != "spec.defaultBackend" || d.Source.ObjectName != "shop/web" {
		t.Fatalf("diagnostic = %+v, want E011 at spec.defaultBackend", d)
	}
}

// A resource backend is W020 naming the resource; the path stays a
// route without backends (503 no-healthy-backend), and a default backend
// does not take its requests.
func TestResourceBackendUnsupported(t *testing.T) {
	ing := ingress("levee", "shop.example.com", nil)
	ing.Spec.Rules[0].HTTP.Paths[0].Backend = networkingv1.IngressBackend{
		Resource: &corev1.TypedLocalObjectReference{APIGroup: ptr("k8s.example.com"), Kind: "StorageBucket", Name: "assets"}}
	_, s := start(t, ing, service(), slice(false))
	d := onlyDiagnostic(t, s.waitFor(t, "the first update", func(config.SourceUpdate) bool { return true }))
	if d.Code != diagnostics.IngressBackendKindUnsupported || d.Key != "spec.rules[0].http.paths[0].backend.resource" || d.Value != "k8s.example.com/StorageBucket/assets" {
		t.Fatalf("diagnostic = %+v", d)
	}
	checkNames(t, d, "StorageBucket assets", "apiGroup k8s.example.com", "not supported")
}

// A resource default backend is the same W020, on the default route.
func TestResourceDefaultBackendUnsupported(t *testing.T) {
	ing := ingress("levee", "shop.example.com", nil)
	ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "page"}}
	_, s := start(t, ing, service(), slice(false))
	u := s.waitFor(t, "the routes", func(u config.SourceUpdate) bool { return len(u.Entrypoints) == 2 })
	def := byHostPath(t, u, "shop.example.com", "/", false)
	if len(def.Backends) != 0 || len(u.Diagnostics) != 1 {
		t.Fatalf("default route %+v diagnostics %v", def, u.Diagnostics)
	}
	if d := u.Diagnostics[0]; d.Code != diagnostics.IngressBackendKindUnsupported || d.Key != "spec.defaultBackend.resource" ||
		d.Value != "core/ConfigMap/page" || !strings.Contains(d.Message, "default backend for shop.example.com") {
		t.Fatalf("diagnostic = %+v", d)
	}
}
