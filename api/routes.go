package api

import "net/http"

// route is one endpoint: what the mux registers and what /openapi.json
// documents, from the same value.
type route struct {
	method  string
	path    string // ServeMux pattern path; {name} wildcards are also OpenAPI templates
	op      string // OpenAPI operationId
	summary string
	access  access
	// body: takes an entrypoint payload (JSON or YAML).
	body bool
	// bodySchema: takes a JSON body of this schema component instead.
	bodySchema string
	// query parameters, documented as strings.
	query []queryParam
	// responses: status → the schema component it returns ("" = none).
	responses []response
	// stream: the 200 response is text/event-stream; text: text/plain
	// (Prometheus exposition).
	stream, text bool
	handler      func(w http.ResponseWriter, r *http.Request, who string)
}

// queryParam is one documented query parameter; typ is its OpenAPI schema
// type ("" means string).
type queryParam struct{ name, typ, doc string }

type response struct {
	status int
	schema string
	doc    string
}

func (rt route) pattern() string { return rt.method + " " + rt.path }

// Schema component names used by responses.
const (
	schemaError      = "Error"
	schemaStored     = "StoredEntrypoint"
	schemaStatus     = "EntrypointStatus"
	schemaStatusList = "EntrypointList"
	schemaDiags      = "DiagnosticsReport"
	schemaBreaker    = "BreakerStatus"
	schemaBreakers   = "BreakerList"
	schemaHealth     = "Health"
	schemaSession    = "Session"
	schemaCatalogue  = "Catalogue"
	schemaHistory    = "BreakerHistory"
	schemaReady      = "Readiness"
	schemaOpenAPI    = "OpenAPIDocument"
	schemaCerts      = "CertificateList"
	schemaPolicy     = "Policy"
	schemaPolicies   = "PolicyList"
)

// authErrors are the responses every guarded route can give.
func authErrors(need access) []response {
	if need == accessOpen {
		return nil
	}
	out := []response{{http.StatusUnauthorized, schemaError, "missing or invalid bearer token"}}
	if need == accessWrite {
		out = append(out, response{http.StatusForbidden, schemaError, "the read token cannot write (or: another source owns the entrypoint)"})
	}
	return out
}

func with(need access, rs ...response) []response { return append(rs, authErrors(need)...) }

// routeTable is the API. Adding an endpoint here registers it and
// documents it.
func (s *Server) routeTable() []route {
	payloadErrors := []response{
		{http.StatusBadRequest, schemaError, "malformed payload, or a bad or unknown query parameter (strict, dry_run)"},
		{http.StatusRequestEntityTooLarge, schemaError, "body over 1 MiB"},
		{http.StatusUnsupportedMediaType, schemaError, "Content-Type is not JSON or YAML"},
		{http.StatusUnprocessableEntity, schemaError, "payload is well-formed but invalid (no hostnames, bad name, unsupported protocol), or, with strict=true, has diagnostics of warning level or above (listed); nothing stored"},
		{http.StatusInternalServerError, schemaError, "the state file could not be written; nothing changed"},
	}
	return []route{
		{method: "GET", path: "/health", op: "health", summary: "Liveness; always open.", access: accessOpen,
			responses: with(accessOpen, response{200, schemaHealth, "alive"}), handler: s.health},
		{method: "GET", path: "/ready", op: "ready", summary: "200 once every enabled provider has synced once; lists each provider with its connection state.", access: accessRead,
			responses: with(accessRead, response{200, schemaReady, "ready"}, response{503, schemaReady, "a provider is pending"}), handler: s.readiness},
		{method: "GET", path: "/session", op: "session", summary: "The role the request's token grants (admin, read, or open without tokens) and whether it may write.", access: accessRead,
			responses: with(accessRead, response{200, schemaSession, "the caller's role"}), handler: s.session},
		{method: "GET", path: "/entrypoints", op: "listEntrypoints", summary: "Entrypoints of all sources with backend health, breaker state and diagnostics, ordered by id; paged and filtered on request.", access: accessRead,
			query:     listParams(),
			responses: with(accessRead, response{200, schemaStatusList, "the entrypoints (a page of them with limit=)"}, response{400, schemaError, "a bad or unknown query parameter"}), handler: s.listEntrypoints},
		{method: "GET", path: "/entrypoints/{id}", op: "getEntrypoint", summary: "One entrypoint of any source.", access: accessRead,
			responses: with(accessRead, response{200, schemaStatus, "the entrypoint"}, response{404, schemaError, "no such entrypoint"}), handler: s.getEntrypoint},
		{method: "POST", path: "/entrypoints", op: "createEntrypoint", summary: "Create an API entrypoint; validated like labels and stored durably before the answer.", access: accessWrite, body: true,
			query:     writeParams(),
			responses: with(accessWrite, append([]response{{201, schemaStored, "created (with dry_run=true: would be created, nothing stored); the stored entrypoint and its diagnostics"}, {409, schemaError, "the id exists in some source"}}, payloadErrors...)...), handler: s.createEntrypoint},
		{method: "PUT", path: "/entrypoints/{id}", op: "replaceEntrypoint", summary: "Replace an API entrypoint.", access: accessWrite, body: true,
			query:     writeParams(),
			responses: with(accessWrite, append([]response{{200, schemaStored, "replaced (with dry_run=true: would be replaced, nothing stored); the stored entrypoint and its diagnostics"}, {404, schemaError, "no such entrypoint"}}, payloadErrors...)...), handler: s.replaceEntrypoint},
		{method: "POST", path: "/entrypoints/bulk", op: "bulkEntrypoints", summary: "Create, replace and delete many API entrypoints in one durable write, all or nothing (docs/api.md#bulk-writes).", access: accessWrite, bodySchema: "BulkRequest",
			query:     writeParams(),
			responses: with(accessWrite, response{200, "BulkAnswer", "applied (with dry_run=true: would be applied, nothing stored); each operation's outcome"}, response{400, schemaError, "malformed body or query"}, response{413, schemaError, "body over 64 MiB"}, response{415, schemaError, "Content-Type is not JSON"}, response{422, "BulkAnswer", "an operation was refused; nothing stored; each operation's outcome"}, response{500, schemaError, "the state file could not be written; nothing changed"}), handler: s.bulkEntrypoints},
		{method: "PUT", path: "/entrypoints", op: "setEntrypoints", summary: "Make the API entrypoints exactly the set given: create, replace (unchanged ones untouched) and delete in one durable write, all or nothing.", access: accessWrite, bodySchema: "EntrypointSet",
			query:     writeParams(),
			responses: with(accessWrite, response{200, "BulkAnswer", "applied (with dry_run=true: would be applied, nothing stored); what happened to each id"}, response{400, schemaError, "malformed body or query"}, response{413, schemaError, "body over 64 MiB"}, response{415, schemaError, "Content-Type is not JSON"}, response{422, "BulkAnswer", "an entrypoint was refused; nothing stored"}, response{500, schemaError, "the state file could not be written; nothing changed"}), handler: s.setEntrypoints},
		{method: "DELETE", path: "/entrypoints/{id}", op: "deleteEntrypoint", summary: "Delete an API entrypoint.", access: accessWrite,
			responses: with(accessWrite, response{204, "", "deleted"}, response{404, schemaError, "no such entrypoint"}, response{500, schemaError, "the state file could not be written; nothing changed"}), handler: s.deleteEntrypoint},
		{method: "GET", path: "/policies", op: "listPolicies", summary: "Named policies of every source in force, one per name, each with the ids of the routes that use it.", access: accessRead,
			responses: with(accessRead, response{200, schemaPolicies, "all policies"}), handler: s.listPolicies},
		{method: "GET", path: "/policies/{name}", op: "getPolicy", summary: "One named policy of any source, with the routes that use it.", access: accessRead,
			responses: with(accessRead, response{200, schemaPolicy, "the policy"}, response{404, schemaError, "no such policy"}), handler: s.getPolicy},
		{method: "PUT", path: "/policies/{name}", op: "putPolicy", summary: "Create or replace an API named policy (JSON or YAML: name and config with policy groups), validated like labels and stored durably before the answer; every route using it changes at once.", access: accessWrite, bodySchema: "PolicyPayload",
			query: []queryParam{
				{name: "strict", typ: "boolean", doc: "refuse (422) a policy with diagnostics of warning level or above instead of storing it with fallbacks"},
				{name: "dry_run", typ: "boolean", doc: "validate and answer as a real write would, storing nothing"},
			},
			responses: with(accessWrite, append([]response{{200, schemaPolicy, "replaced"}, {201, schemaPolicy, "created"}}, payloadErrors...)...), handler: s.putPolicy},
		{method: "DELETE", path: "/policies/{name}", op: "deletePolicy", summary: "Delete an API named policy; routes that still use it deny (E007).", access: accessWrite,
			responses: with(accessWrite, response{204, "", "deleted"}, response{404, schemaError, "no such policy"}, response{500, schemaError, "the state file could not be written; nothing changed"}), handler: s.deletePolicy},
		{method: "GET", path: "/diagnostics", op: "listDiagnostics", summary: "Current diagnostics of all sources, grouped by object, with totals.", access: accessRead,
			query: []queryParam{
				{name: "severity", doc: "only these severities: info, warn, error (comma-separated)"},
				{name: "code", doc: "only these codes, e.g. W024 (comma-separated)"},
			},
			responses: with(accessRead, response{200, schemaDiags, "diagnostics"}, response{400, schemaError, "unknown severity or code"}), handler: s.listDiagnostics},
		{method: "GET", path: "/diagnostics/catalogue", op: "diagnosticsCatalogue", summary: "Every diagnostic code with its title, effect, fix and example (what `levee explain` prints).", access: accessRead,
			responses: with(accessRead, response{200, schemaCatalogue, "the catalogue"}), handler: s.catalogue},
		{method: "GET", path: "/breakers", op: "listBreakers", summary: "State and figures of every breaker.", access: accessRead,
			responses: with(accessRead, response{200, schemaBreakers, "all breakers"}), handler: s.listBreakers},
		{method: "GET", path: "/breakers/{route}", op: "getBreaker", summary: "One route's breaker.", access: accessRead,
			responses: with(accessRead, response{200, schemaBreaker, "the breaker"}, response{404, schemaError, "no such breaker"}), handler: s.getBreaker},
		s.breakerControl("open", "Force the breaker open (rule manual)."),
		s.breakerControl("close", "Force the breaker closed."),
		s.breakerControl("reset", "Reset the breaker to closed with empty counters."),
		{method: "GET", path: "/history", op: "breakerHistory", summary: "Every breaker's requests and failures over the last minutes, one point per sampling interval (in memory; gone at restart).", access: accessRead,
			responses: with(accessRead, response{200, schemaHistory, "the history of every breaker"}), handler: s.history},
		{method: "GET", path: "/certificates", op: "listCertificates", summary: "Certificates the TLS listeners serve, by host: source (acme, static, default), issuer, expiry, last error and next renewal.", access: accessRead,
			responses: with(accessRead, response{200, schemaCerts, "all certificates; empty without a TLS listener"}), handler: s.listCertificates},
		{method: "GET", path: "/events", op: "events", summary: "Server-Sent Events: breaker transitions, route changes, diagnostic changes, fallback starts and stops. With Last-Event-ID (or after=), the remembered events after that one come first.", access: accessRead, stream: true,
			query: []queryParam{
				{name: "after", doc: "an event id (an event's `id`, GET /events/recent's `last_id`): the stream starts with the remembered events published after it; overrides the Last-Event-ID header"},
			},
			responses: with(accessRead, response{200, "", "text/event-stream; `id: <id>`, `event: <type>`, `data: <json>`"}), handler: s.events},
		{method: "GET", path: "/metrics", op: "metrics", summary: "Prometheus metrics.", access: accessRead, text: true,
			responses: with(accessRead, response{200, "", "Prometheus text exposition"}), handler: s.metrics},
		{method: "GET", path: "/openapi.json", op: "openapi", summary: "This document.", access: accessRead,
			responses: with(accessRead, response{200, schemaOpenAPI, "OpenAPI 3.0 document"}), handler: s.serveOpenAPI},
	}
}

func (s *Server) breakerControl(action, summary string) route {
	return route{
		method: "POST", path: "/breakers/{route}/" + action, op: action + "Breaker", summary: summary + " Logged with who did it.",
		access: accessWrite,
		responses: with(accessWrite,
			response{200, schemaBreaker, "done; the breaker after the action"},
			response{404, schemaError, "no such breaker (no such route, or a route without circuit_breaker settings)"},
			response{500, schemaError, "the router refused the action (a bug)"}),
		handler: func(w http.ResponseWriter, r *http.Request, who string) { s.controlBreaker(w, r, who, action) },
	}
}
