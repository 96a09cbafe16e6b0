package config

import (
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// MigratingDoc is the document the hints of foreign keys point to, as a path
// from the repository root (where operators read it).
const MigratingDoc = "docs/migrating.md"

// ForeignKey is a key another proxy (Traefik, Sōzune) uses for something
// Levee names differently or does not do. Operators who move a compose file
// over write these keys under Levee's prefix; an edit-distance suggestion
// cannot help them (`tls` is close to no Levee field), so an unknown key is
// first looked up in this table and the hint says what Levee does instead.
type ForeignKey struct {
	// Key is the foreign field as it would follow <prefix>.http.<service>.
	// ("loadbalancer.server.port"). "x.*" matches x and every key under
	// it; "x*" matches every key starting with x.
	Key string
	// Proxy names whose key it is: "Traefik", "Sōzune" or both.
	Proxy string
	// Fields are the labels of the Levee fields that do the same job;
	// empty when Levee does not have the feature.
	Fields []string
	// Note completes the hint: how the fields are used, or what to do
	// instead. It states what Levee does today and promises nothing.
	Note string
}

// The proxies named in the table.
const (
	proxyTraefik = "Traefik"
	proxySozune  = "Sōzune"
	proxyBoth    = "Traefik and Sōzune"
)

// foreignTable is the one table of foreign keys: the unknown-key hints of
// labels and API payloads and the generated part of docs/migrating.md all
// derive from it. More specific keys come before the patterns that would
// also match them. A key that differs from a Levee field only in case
// (Traefik's circuitbreaker.responsecode) is that field: keys are read in
// any case.
var foreignTable = []ForeignKey{
	// Traefik routers.
	{Key: "rule", Proxy: proxyTraefik, Fields: []string{"host", "path", "pathRegex", "methods"},
		Note: "Host(`a`) is host=a, PathPrefix(`/p`) is path=/p, PathRegexp is pathRegex, Method is methods"},
	{Key: "entrypoints", Proxy: proxyTraefik, Fields: []string{"listeners"},
		Note: "Traefik's entry points are Levee's listeners (levee serve --listen name=addr[,tls])"},
	{Key: "errors.service", Proxy: proxyTraefik, Fields: []string{"errors.route"},
		Note: "the error pages come from another Levee route, named as circuitBreaker.fallback names one (or from a file: `errors.file`, inside `--error-pages-dir`)"},
	{Key: "service", Proxy: proxyTraefik,
		Note: "a Levee service is the <service> part of the label key and is its own route: there is no router to point at it; write the router's rule and the service's port under one service name"},
	{Key: "middlewares", Proxy: proxyTraefik,
		Note: "what the common middlewares do are fields of the service: stripPrefix, addPrefix, replacePath, replacePathRegex.*, redirectScheme.*, redirectRegex.*, headers.*, cors.*, compress, retry.attempts, circuitBreaker.*"},
	{Key: "tls.certresolver", Proxy: proxyTraefik, Fields: []string{"tls"},
		Note: "tls=true is enough: the certificate comes from --tls-cert-dir, else ACME (--acme-email), else the default certificate"},
	{Key: "tls.domains*", Proxy: proxyTraefik, Fields: []string{"host"},
		Note: "Levee asks for a certificate for each host of a tls=true route"},
	{Key: "tls.options", Proxy: proxyTraefik,
		Note: "Levee's TLS policy is fixed: TLS 1.2 and 1.3, modern AEAD suites (docs/tls.md)"},
	// Traefik services.
	{Key: "loadbalancer.server.port", Proxy: proxyTraefik, Fields: []string{"port"}},
	{Key: "loadbalancer.server.scheme", Proxy: proxyTraefik, Fields: []string{"scheme"},
		Note: "the same values: scheme=https speaks HTTPS to the backends, scheme=h2c cleartext HTTP/2 (gRPC); Levee adds h2, HTTP/2 over TLS"},
	{Key: "loadbalancer.serverstransport", Proxy: proxyTraefik, Fields: []string{"tls.serverName", "tls.ca", "tls.clientCert", "tls.insecureSkipVerify"},
		Note: "with scheme=https or h2; a serversTransport's serverName, rootCAs, certificates and insecureSkipVerify are these fields of the service (docs/tls.md)"},
	{Key: "loadbalancer.passhostheader", Proxy: proxyTraefik,
		Note: "Levee always passes the client's Host header to the backend"},
	{Key: "loadbalancer.sticky.*", Proxy: proxyTraefik, Fields: []string{"sticky.cookie"},
		Note: "loadbalancer.sticky.cookie.name is sticky.cookie.name, and so are secure, httpOnly and sameSite"},
	{Key: "loadbalancer.healthcheck.path", Proxy: proxyTraefik, Fields: []string{"healthCheck.path"}},
	{Key: "loadbalancer.healthcheck.interval", Proxy: proxyTraefik, Fields: []string{"healthCheck.interval"}},
	{Key: "loadbalancer.healthcheck.timeout", Proxy: proxyTraefik, Fields: []string{"healthCheck.timeout"}},
	{Key: "loadbalancer.healthcheck.status", Proxy: proxyTraefik, Fields: []string{"healthCheck.status"}},
	{Key: "loadbalancer.healthcheck.mode", Proxy: proxyTraefik, Fields: []string{"healthCheck.grpc"},
		Note: "mode=grpc is healthCheck.grpc=true: grpc.health.v1.Health/Check over the route's h2c or h2, SERVING is healthy"},
	{Key: "loadbalancer.healthcheck.*", Proxy: proxyTraefik,
		Note: "Levee's health check has path, status, timeout, interval, rise and fall, or grpc and grpcService (healthCheck.*)"},
	// Traefik middlewares.
	{Key: "buffering.maxrequestbodybytes", Proxy: proxyTraefik, Fields: []string{"maxRequestBodyBytes"},
		Note: "a larger body is answered 413 before the backend is asked; Levee streams bodies, it does not spool them to disk"},
	{Key: "buffering.memrequestbodybytes", Proxy: proxyTraefik, Fields: []string{"retry.bodyBuffer"},
		Note: "the largest body kept in memory so that a retry can resend it (default 64KiB, at most 16MiB); larger bodies stream once and are not retried"},
	{Key: "buffering.retryexpression", Proxy: proxyTraefik, Fields: []string{"retry.attempts"},
		Note: "Levee retries transport errors, timeouts and failure statuses of idempotent requests (docs/policies.md); there is no expression"},
	{Key: "buffering.*", Proxy: proxyTraefik, Fields: []string{"maxRequestBodyBytes", "retry.bodyBuffer"},
		Note: "response bodies are streamed, never buffered; maxResponseBodyBytes has no equivalent"},
	{Key: "circuitbreaker.expression", Proxy: proxyTraefik, Fields: []string{"circuitBreaker.threshold", "circuitBreaker.failureStatuses"},
		Note: "ResponseCodeRatio(500, 600, 0, 600) > 0.5 is threshold=0.5; failures are 5xx and transport errors unless failureStatuses says otherwise"},
	{Key: "circuitbreaker.checkperiod", Proxy: proxyTraefik, Fields: []string{"circuitBreaker.window"},
		Note: "Levee judges every outcome, by default over the last circuitBreaker.minRequests outcomes"},
	{Key: "circuitbreaker.fallbackduration", Proxy: proxyTraefik, Fields: []string{"circuitBreaker.cooldown"}},
	{Key: "stripprefix.prefixes", Proxy: proxyTraefik, Fields: []string{"stripPrefix"},
		Note: "stripPrefix=true strips the route's path"},
	{Key: "addprefix.prefix", Proxy: proxyTraefik, Fields: []string{"addPrefix"}},
	// Traefik's access middlewares: keys that differ from Levee's only in
	// case (basicauth.users, ratelimit.average, forwardauth.address) are
	// Levee's; these name an access policy, so they make the route deny
	// (E006).
	{Key: "ipallowlist.ipstrategy.depth", Proxy: proxyTraefik, Fields: []string{"ipAllowList.depth"}},
	{Key: "ipallowlist.ipstrategy.*", Proxy: proxyTraefik, Fields: []string{"ipAllowList.depth"},
		Note: "the client address is the peer's, or X-Forwarded-For's from --trusted-proxies; depth picks an entry"},
	{Key: "ipallowlist.rejectstatuscode", Proxy: proxyTraefik,
		Note: "a client outside the list always gets 403"},
	{Key: "ratelimit.sourcecriterion.requestheadername", Proxy: proxyTraefik, Fields: []string{"rateLimit.sourceCriterion"},
		Note: "rateLimit.sourceCriterion=header:<name>"},
	{Key: "ratelimit.sourcecriterion.requesthost", Proxy: proxyTraefik, Fields: []string{"rateLimit.sourceCriterion"},
		Note: "rateLimit.sourceCriterion=host"},
	{Key: "ratelimit.sourcecriterion.ipstrategy.*", Proxy: proxyTraefik, Fields: []string{"rateLimit.sourceCriterion"},
		Note: "rateLimit.sourceCriterion=ip takes the client address by the --trusted-proxies rule"},
	{Key: "forwardauth.authresponseheadersregex", Proxy: proxyTraefik, Fields: []string{"forwardAuth.authResponseHeaders"},
		Note: "list the headers by name"},
	{Key: "forwardauth.tls.*", Proxy: proxyTraefik,
		Note: "Levee checks an https:// auth service against the system roots"},
	{Key: "basicauth.headerfield", Proxy: proxyTraefik,
		Note: "Levee does not pass the user name to the backend in a header"},
	{Key: "ipwhitelist.*", Proxy: proxyTraefik, Fields: []string{"ipAllowList.sourceRange", "ipAllowList.depth"},
		Note: "ipWhiteList is Traefik's former name of ipAllowList"},
	{Key: "inflightreq.*", Proxy: proxyTraefik, Fields: []string{"inFlight.amount", "inFlight.sourceCriterion"},
		Note: "`inFlight.scope=fleet` counts across the replicas sharing `--breaker-store`"},
	{Key: "digestauth.*", Proxy: proxyTraefik, Fields: []string{"basicAuth.users"},
		Note: "Levee has no digest auth; basic auth with bcrypt hashes does the job over TLS"},
	// Traefik's header and redirect middlewares beyond Levee's fields.
	{Key: "headers.sslRedirect", Proxy: proxyTraefik, Fields: []string{"redirectScheme.scheme"},
		Note: "redirectScheme.scheme=https; on a tls=true route, tls.redirect does it (the default)"},
	{Key: "headers.browserXssFilter", Proxy: proxyTraefik,
		Note: "browsers dropped X-XSS-Protection; use headers.contentTypeNosniff and a Content-Security-Policy in headers.customResponseHeaders"},
	{Key: "headers.stsseconds", Proxy: proxyTraefik, Fields: []string{"tls.hsts"},
		Note: "sent on the HTTPS answers of a tls=true route"},
	{Key: "headers.stsIncludeSubdomains", Proxy: proxyTraefik, Fields: []string{"tls.hsts.includeSubDomains"}},
	{Key: "headers.stsPreload", Proxy: proxyTraefik, Fields: []string{"tls.hsts.preload"}},
	{Key: "headers.forceSTSHeader", Proxy: proxyTraefik, Fields: []string{"tls.hsts"},
		Note: "Levee sends Strict-Transport-Security on HTTPS answers only, never over plain HTTP (RFC 6797 7.2)"},
	{Key: "headers.customFrameOptionsValue", Proxy: proxyTraefik, Fields: []string{"headers.frameDeny", "headers.customResponseHeaders"},
		Note: "frameDeny=true sends DENY; another value is headers.customResponseHeaders.X-Frame-Options"},
	{Key: "headers.accessControlAllowOriginListRegex", Proxy: proxyTraefik, Fields: []string{"cors.allowOrigins"},
		Note: "Levee lists origins exactly"},
	// Sōzune's own keys.
	{Key: "httpsRedirect", Proxy: proxySozune, Fields: []string{"tls.redirect"},
		Note: "a tls=true route redirects plain HTTP to https:// unless tls.redirect=false; where TLS ends in front of Levee, redirectScheme.scheme=https"},
	{Key: "auth.*", Proxy: proxySozune},
	{Key: "stickySession", Proxy: proxySozune, Fields: []string{"sticky.cookie"}},
}

// ForeignKeys returns the table of foreign keys, in documentation order.
func ForeignKeys() []ForeignKey {
	out := make([]ForeignKey, len(foreignTable))
	for i, fk := range foreignTable {
		fk.Fields = append([]string(nil), fk.Fields...)
		out[i] = fk
	}
	return out
}

// foldKey is the form keys are compared in: Traefik's labels ignore case,
// and a JSON path spells httpsRedirect https_redirect, so case, '_' and '-'
// do not count.
func foldKey(s string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
}

// matches reports whether the folded name is covered by the entry's key.
func (fk ForeignKey) matches(folded string) bool {
	k := foldKey(fk.Key)
	if base, ok := strings.CutSuffix(k, ".*"); ok {
		return folded == base || strings.HasPrefix(folded, base+".")
	}
	if base, ok := strings.CutSuffix(k, "*"); ok {
		return strings.HasPrefix(folded, base)
	}
	return folded == k
}

// lookupForeign finds the entry for an unknown name and the part of the
// name it matched. The name is tried whole, then without its leading
// segments, longest first: a Traefik label moved under Levee's prefix keeps
// its router or service name (levee.http.routers.web.rule gives the field
// "web.rule"), which must not hide the key.
func lookupForeign(name string) (ForeignKey, string, bool) {
	rest := name
	for {
		folded := foldKey(rest)
		for _, fk := range foreignTable {
			if fk.matches(folded) {
				return fk, rest, true
			}
		}
		_, after, ok := strings.Cut(rest, ".")
		if !ok || after == "" {
			return ForeignKey{}, "", false
		}
		rest = after
	}
}

// hint renders the entry for the key as matched, naming Levee's fields the
// way the operator writes them (render: a label key or a JSON path).
func (fk ForeignKey) hint(matched string, render func(f *Field) string) string {
	var b strings.Builder
	b.WriteString(matched + " is a " + fk.Proxy + " key: ")
	if len(fk.Fields) == 0 {
		b.WriteString("not supported by Levee")
	} else {
		names := make([]string, len(fk.Fields))
		for i, label := range fk.Fields {
			names[i] = render(fieldByLabel(label))
		}
		b.WriteString("Levee calls this " + joinAnd(names))
	}
	if fk.Note != "" {
		b.WriteString("; " + fk.Note)
	}
	b.WriteString(" (see " + MigratingDoc + ")")
	return b.String()
}

// joinAnd joins names as prose: "a", "a and b", "a, b and c".
func joinAnd(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// ForeignLabelHint returns the hint for an unknown label field that another
// proxy uses, or "" when the table has no entry for it. name is the field
// after <prefix>.<protocol>.<service>.; key renders a Levee field label as
// the full label key.
func ForeignLabelHint(name string, key func(field string) string) string {
	fk, matched, ok := lookupForeign(name)
	if !ok {
		return ""
	}
	return fk.hint(matched, func(f *Field) string { return key(f.Label) })
}

// foreignJSONHint is ForeignLabelHint for an API payload: path is the JSON
// path as reported ("config.tls", "config.circuit_breaker.expression"), and
// Levee's fields are named by their JSON paths.
func foreignJSONHint(path string) string {
	fk, matched, ok := lookupForeign(strings.TrimPrefix(path, "config."))
	if !ok {
		return ""
	}
	return fk.hint(matched, func(f *Field) string { return f.JSON })
}

// unknownLabelHint is the hint of an unknown label field: the foreign-key
// table first (it knows what the operator meant), then the closest Levee
// field.
func unknownLabelHint(name string, key func(field string) string) string {
	if h := ForeignLabelHint(name, key); h != "" {
		return h
	}
	if c, ok := diagnostics.Closest(name, labelNames); ok {
		return "did you mean " + key(c) + "?"
	}
	return ""
}

// unknownJSONHint is unknownLabelHint for an API payload path.
func unknownJSONHint(path string, candidates []string) string {
	if h := foreignJSONHint(path); h != "" {
		return h
	}
	return didYouMean(path, candidates)
}
