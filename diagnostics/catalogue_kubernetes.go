package diagnostics

// Codes of the Kubernetes provider (docs/kubernetes.md). Problems with an
// Ingress's levee.io/ annotations carry the codes the same label gives.
const (
	// IngressRuleNoHost: an Ingress rule, or a default backend of an
	// Ingress without rule hosts, has no host; it is not routed rather
	// than matching every host.
	IngressRuleNoHost Code = "E011"
	// IngressBackendNotFound: the Service an Ingress path names, or the
	// Service port it names, does not exist; the route answers 503.
	IngressBackendNotFound Code = "W008"
	// IngressBackendNoEndpoints: the backend Service exists but has no
	// ready endpoint at the port; the route answers 503 until one is.
	IngressBackendNoEndpoints Code = "W011"
	// IngressBackendKindUnsupported: an Ingress backend is a resource,
	// not a Service; the route answers 503.
	IngressBackendKindUnsupported Code = "W020"
)

// kubernetesEntries are the codes of the Kubernetes provider.
func kubernetesEntries() []Entry {
	return []Entry{
		{
			Code: IngressRuleNoHost, Severity: Error, Title: "Ingress rule without host",
			Effect:  "The rule (every path of it) is not routed: Levee routes by host name and does not turn a rule without host into a route that matches every request. The Ingress's other rules apply. The same holds for a `spec.defaultBackend` of an Ingress without any rule host (key `spec.defaultBackend`): a default backend takes the paths no rule matches on the rules' hosts only.",
			Fix:     "Give the rule a `host` (one rule per host name; a wildcard such as `*.example.com` is accepted). For a default backend, add a rule with a host (its `http` may be left out).",
			Example: "spec:\n  ingressClassName: levee\n  rules:\n    - http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: app, port: {number: 80}}}}]}",
		},
		{
			Code: IngressBackendNotFound, Severity: Warn, Title: "Ingress backend Service or port not found",
			Effect:  "The path is routed without backends: it answers 503 with `X-Levee-Diagnostic: no-healthy-backend` (it is not dropped, so no other route answers its requests) until the Service, or the port, exists. The diagnostic names the Ingress, the path and the Service and port.",
			Fix:     "Create the Service in the Ingress's namespace, or correct `backend.service.name`; name a port the Service has (`port.name` as in the Service's `spec.ports[].name`, or `port.number` as its `spec.ports[].port`, not the target port).",
			Example: "spec:\n  ingressClassName: levee\n  rules:\n    - host: shop.example.com\n      http: {paths: [{path: /, pathType: Prefix, backend: {service: {name: no-such-service, port: {number: 80}}}}]}",
		},
		{
			Code: IngressBackendNoEndpoints, Severity: Warn, Title: "Ingress backend Service has no ready endpoints",
			Effect:  "The path is routed without backends: it answers 503 with `X-Levee-Diagnostic: no-healthy-backend` until an endpoint of the Service is ready, serving and not terminating at the port (a rollout or a scale to zero passes through this state). The diagnostic names the Ingress, the path and the Service and port.",
			Fix:     "Check the Service's selector matches running pods (`kubectl get endpointslices -l kubernetes.io/service-name=<service>`) and that the pods pass their readiness probes.",
			Example: "# a Service whose selector matches no pod\nkind: Service\nspec: {selector: {app: nothing}, ports: [{name: http, port: 80}]}",
		},
		{
			Code: IngressBackendKindUnsupported, Severity: Warn, Title: "Ingress backend kind not supported",
			Effect:  "A `resource` backend (a reference to another kind of object, such as a storage bucket) is not proxied to: Levee proxies to Services only. The path (or the default backend's route) is routed without backends: it answers 503 with `X-Levee-Diagnostic: no-healthy-backend`, so no other route answers its requests. The diagnostic names the Ingress, the host and path and the resource's apiGroup, kind and name.",
			Fix:     "Point the path at a Service (`backend.service`), for example one in front of what the resource serves.",
			Example: "spec:\n  ingressClassName: levee\n  rules:\n    - host: shop.example.com\n      http: {paths: [{path: /static, pathType: Prefix, backend: {resource: {apiGroup: k8s.example.com, kind: StorageBucket, name: assets}}}]}",
		},
	}
}
