package kubernetes

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// AnnotationPrefix begins the annotations read as label fields
// (levee.io/circuitBreaker.threshold is the label circuitBreaker.threshold).
const AnnotationPrefix = "levee.io/"

// store is one read of the informers' caches.
type store struct {
	ingresses []*networkingv1.Ingress
	services  []*corev1.Service
	slices    []*discoveryv1.EndpointSlice
}

// build turns the Ingresses of class into entrypoints: one per rule host
// and path, and one per rule host for a default backend, with the ready
// endpoints of the backend Service.
func build(st store, class string) ([]config.Entrypoint, []diagnostics.Diagnostic) {
	sort.Slice(st.ingresses, func(i, j int) bool {
		a, b := st.ingresses[i], st.ingresses[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	var eps []config.Entrypoint
	var diags []diagnostics.Diagnostic
	for _, ing := range st.ingresses {
		if ing.Spec.IngressClassName == nil || *ing.Spec.IngressClassName != class {
			continue
		}
		e, d := ingressRoutes(st, ing)
		eps, diags = append(eps, e...), append(diags, d...)
	}
	return eps, diags
}

// lowestPriority is the lowest priority the priority field accepts: a
// default backend's route loses to every other route on its host and path.
const lowestPriority = -1_000_000

// ingressRoutes are the routes of one Ingress: one per rule host and path,
// then, with spec.defaultBackend, one per rule host for the paths no rule
// matches. The host and path fields come from the rule, the other fields
// from the levee.io/ annotations.
func ingressRoutes(st store, ing *networkingv1.Ingress) ([]config.Entrypoint, []diagnostics.Diagnostic) {
	b := &ingressBuild{st: st, ing: ing, name: ing.Namespace + "/" + ing.Name, fields: map[string]string{}}
	for k, v := range ing.Annotations {
		if f, ok := strings.CutPrefix(k, AnnotationPrefix); ok && f != "host" && f != "path" && f != "prefix" {
			b.fields[f] = v
		}
	}
	var hosts []string
	// covered are the hosts with a prefix path "/": every request to them
	// matches a rule, so the default backend has no paths left there.
	covered := map[string]bool{}
	for ri, rule := range ing.Spec.Rules {
		if rule.Host == "" {
			if rule.HTTP != nil {
				b.diags = append(b.diags, diagnostics.New(diagnostics.IngressRuleNoHost, b.src(""), fmt.Sprintf("spec.rules[%d].host", ri), "", "",
					"Ingress rule without host: not routed (Levee does not match every host)", "give the rule a host"))
			}
			continue
		}
		if !slices.Contains(hosts, rule.Host) {
			hosts = append(hosts, rule.Host)
		}
		if rule.HTTP == nil {
			continue
		}
		for pi, path := range rule.HTTP.Paths {
			exact := path.PathType != nil && *path.PathType == networkingv1.PathTypeExact
			if !exact && (path.Path == "" || path.Path == "/") {
				covered[rule.Host] = true
			}
			b.route(rule.Host, path.Path, exact, path.Backend, fmt.Sprintf("spec.rules[%d].http.paths[%d].backend", ri, pi), false)
		}
	}
	if def := ing.Spec.DefaultBackend; def != nil {
		if len(hosts) == 0 {
			b.diags = append(b.diags, diagnostics.New(diagnostics.IngressRuleNoHost, b.src(""), "spec.defaultBackend", "", "",
				"Ingress defaultBackend without any rule host: not routed (Levee does not match every host)",
				"add a rule with a host: the default backend then takes that host's requests no rule path matches"))
		}
		for _, h := range hosts {
			if !covered[h] {
				b.route(h, "/", false, *def, "spec.defaultBackend", true)
			}
		}
	}
	return b.eps, b.diags
}

// ingressBuild gathers the routes of one Ingress and their diagnostics.
type ingressBuild struct {
	st     store
	ing    *networkingv1.Ingress
	name   string            // namespace/name
	fields map[string]string // the levee.io/ annotations, as label fields
	n      int               // routes made, for the next id
	eps    []config.Entrypoint
	diags  []diagnostics.Diagnostic
}

// src is the diagnostics' source: the Ingress, and the route id when one.
func (b *ingressBuild) src(id string) diagnostics.Source {
	return diagnostics.Source{Provider: config.SourceKubernetes, ObjectID: b.name, ObjectName: b.name, Service: id}
}

// route adds the route of host and path to backend, written at key. A
// default backend's route (def) matches every path of host at the lowest
// priority, so any rule's path, of this Ingress or another source, wins.
// A backend that is not a Service still makes the route, without backends
// (it answers 503 no-healthy-backend rather than letting another route
// take its requests), and a diagnostic (W020).
func (b *ingressBuild) route(host, path string, exact bool, backend networkingv1.IngressBackend, key string, def bool) {
	if backend.Service == nil && backend.Resource == nil {
		return // the API server refuses it; nothing to route to
	}
	id := fmt.Sprintf("%s-%s-%d@%s", b.ing.Namespace, b.ing.Name, b.n, config.SourceKubernetes)
	b.n++
	f := make(map[string]string, len(b.fields)+2)
	for k, v := range b.fields {
		f[k] = v
	}
	f["host"] = host
	if path != "" {
		f["path"] = path
	}
	src := b.src(id)
	lc, d := config.DecodeLabels(f, src, func(field string) string { return AnnotationPrefix + field })
	b.diags = append(b.diags, d...)
	if !lc.Routable {
		return
	}
	ep := lc.Entrypoint
	ep.ID, ep.Name, ep.Source = id, strings.TrimSuffix(id, "@"+config.SourceKubernetes), config.SourceKubernetes
	if exact {
		ep.PathRegex = "^" + regexp.QuoteMeta(ep.Path) + "$"
	}
	what := fmt.Sprintf("Ingress %s path %s%s", b.name, host, ep.Path)
	if def {
		ep.Priority = lowestPriority
		what = fmt.Sprintf("Ingress %s default backend for %s (the paths no rule matches)", b.name, host)
	}
	var d2 *diagnostics.Diagnostic
	if backend.Service != nil {
		ref := backendRef{ns: b.ing.Namespace, b: backend.Service, key: key + ".service", route: what}
		ep.Backends, d2 = backends(b.st, ref, src, lc.Weight)
	} else {
		d2 = resourceBackend(backend.Resource, b.ing.Namespace, key+".resource", what, src)
	}
	if d2 != nil {
		b.diags = append(b.diags, *d2)
	}
	b.eps = append(b.eps, ep)
}

// resourceBackend is the diagnostic of a resource backend (a
// TypedLocalObjectReference, such as a storage bucket): Levee proxies to
// Services only.
func resourceBackend(r *corev1.TypedLocalObjectReference, ns, key, route string, src diagnostics.Source) *diagnostics.Diagnostic {
	group := "core"
	if r.APIGroup != nil && *r.APIGroup != "" {
		group = *r.APIGroup
	}
	d := diagnostics.New(diagnostics.IngressBackendKindUnsupported, src, key, group+"/"+r.Kind+"/"+r.Name, "503 no-healthy-backend",
		fmt.Sprintf("%s: backend resource %s %s (apiGroup %s) is not supported, only Services are; the route answers 503", route, r.Kind, r.Name, group),
		"point backend.service at a Service in namespace "+ns)
	return &d
}

// backendRef is one Ingress path's backend Service, with where it is
// written (key) and the route it feeds, for the diagnostics.
type backendRef struct {
	ns    string
	b     *networkingv1.IngressServiceBackend
	key   string
	route string
}

// port is the service port as the Ingress names it: "http" or "80".
func (r backendRef) port() string {
	if r.b.Port.Name != "" {
		return r.b.Port.Name
	}
	return fmt.Sprint(r.b.Port.Number)
}

// backends are the ready, serving, not terminating endpoint addresses of
// the Service's EndpointSlices, at the target port of the service port the
// Ingress backend names (by name or number). With none, the route stays
// (it answers 503 no-healthy-backend rather than letting another route
// take its requests) and the diagnostic says why: the Service or its port
// not found (W008), or no endpoint in rotation (W011).
func backends(st store, r backendRef, src diagnostics.Source, weight int) ([]config.Backend, *diagnostics.Diagnostic) {
	svcName := r.ns + "/" + r.b.Name
	const effect = "503 no-healthy-backend"
	svc := findService(st, r.ns, r.b.Name)
	if svc == nil {
		d := diagnostics.New(diagnostics.IngressBackendNotFound, src, r.key+".name", r.b.Name, effect,
			fmt.Sprintf("%s: backend Service %s not found; the route answers 503 until it exists", r.route, svcName),
			"create the Service in namespace "+r.ns+" or correct backend.service.name")
		return nil, &d
	}
	portName, ok := servicePortName(svc, r.b)
	if !ok {
		key := r.key + ".port.number"
		if r.b.Port.Name != "" {
			key = r.key + ".port.name"
		}
		d := diagnostics.New(diagnostics.IngressBackendNotFound, src, key, r.port(), effect,
			fmt.Sprintf("%s: Service %s has no port %s; the route answers 503 until it has", r.route, svcName, r.port()),
			"name one of the Service's ports: "+servicePorts(svc))
		return nil, &d
	}
	if weight <= 0 {
		weight = 1
	}
	var out []config.Backend
	for _, s := range st.slices {
		if s.Namespace != r.ns || s.Labels[discoveryv1.LabelServiceName] != r.b.Name {
			continue
		}
		port := 0
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil && portName == "" || p.Name != nil && *p.Name == portName) {
				port = int(*p.Port)
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if !inRotation(e.Conditions) {
				continue
			}
			for _, a := range e.Addresses {
				out = append(out, config.Backend{Address: a, Port: port, Weight: weight, Name: s.Name})
			}
		}
	}
	if len(out) == 0 {
		d := diagnostics.New(diagnostics.IngressBackendNoEndpoints, src, r.key+".name", svcName+":"+r.port(), effect,
			fmt.Sprintf("%s: Service %s has no ready endpoint at port %s; the route answers 503 until one is ready", r.route, svcName, r.port()),
			"check that the Service's selector matches running pods and that they pass their readiness probes")
		return nil, &d
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out, nil
}

// findService is the Service ns/name, nil when not known.
func findService(st store, ns, name string) *corev1.Service {
	for _, svc := range st.services {
		if svc.Namespace == ns && svc.Name == name {
			return svc
		}
	}
	return nil
}

// servicePortName is the name of the Service port the backend names (""
// for the one unnamed port); false when the Service has no such port.
func servicePortName(svc *corev1.Service, b *networkingv1.IngressServiceBackend) (string, bool) {
	for _, sp := range svc.Spec.Ports {
		if b.Port.Name != "" && sp.Name == b.Port.Name || b.Port.Name == "" && sp.Port == b.Port.Number {
			return sp.Name, true
		}
	}
	return "", false
}

// servicePorts lists the Service's ports for a hint: "80 (http), 443 (https)".
func servicePorts(svc *corev1.Service) string {
	if len(svc.Spec.Ports) == 0 {
		return "it has none"
	}
	var parts []string
	for _, sp := range svc.Spec.Ports {
		p := fmt.Sprint(sp.Port)
		if sp.Name != "" {
			p += " (" + sp.Name + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// inRotation: ready (nil reads as ready, as the EndpointSlice API says),
// serving, and not terminating.
func inRotation(c discoveryv1.EndpointConditions) bool {
	isTrue := func(b *bool, def bool) bool {
		if b == nil {
			return def
		}
		return *b
	}
	return isTrue(c.Ready, true) && isTrue(c.Serving, true) && !isTrue(c.Terminating, false)
}
