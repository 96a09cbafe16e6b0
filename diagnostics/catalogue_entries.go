package diagnostics

// entries is the catalogue itself. Examples are written as labels (prefix
// "levee") because that is where most mistakes are made; the API reports the
// same code with the JSON path as key.
func entries() []Entry {
	return []Entry{
		{
			Code: MissingHost, Severity: Error, Title: "service has no host",
			Effect:  "The service is not routed: without a host Levee cannot match any request to it. Other services of the same container are unaffected. The API answers 422.",
			Fix:     "Give the service at least one valid host name (a comma-separated list; `*.example.com` is a wildcard), or `config.hostnames` in the API payload.",
			Example: "levee.http.app.port=8080   # but no levee.http.app.host",
		},
		{
			Code: NoService, Severity: Error, Title: "container enabled but defines no service",
			Effect:  "Nothing of this container is routed.",
			Fix:     "Add at least `<prefix>.http.<service>.host=…`, or remove `<prefix>.enable=true` if the container should not be routed.",
			Example: "levee.enable=true   # and no levee.http.<service>.* label",
		},
		{
			Code: BadPort, Severity: Warn, Title: "invalid port",
			Effect:  "The port falls back to Levee's own choice: the container's only exposed port, else its lowest exposed port, else 80 (an API backend falls back to 80).",
			Fix:     "Use a whole number between 1 and 65535.",
			Example: "levee.http.app.port=80a",
		},
		{
			Code: BadPriority, Severity: Warn, Title: "invalid priority",
			Effect:  "The priority falls back to 0.",
			Fix:     "Use a whole number; between routes with the same host and path length the higher priority wins.",
			Example: "levee.http.app.priority=high",
		},
		{
			Code: BadTimeout, Severity: Warn, Title: "invalid backend timeout",
			Effect:  "The backend timeout falls back to its default (30s).",
			Fix:     "Use a positive duration: whole seconds (`10`) or a Go duration (`1500ms`, `2m`).",
			Example: "levee.http.app.backendTimeout=ten",
		},
		{
			Code: NetworkNotFound, Severity: Warn, Title: "labelled network not attached",
			Effect:  "Levee ignores the network label for this container and picks a network itself: one it shares with Levee's own container, else the first by name.",
			Fix:     "Set `<prefix>.network` to the name of a network the container is attached to (as `docker inspect` shows it, including any compose project prefix).",
			Example: "levee.network=frontend   # container is only on myproject_frontend",
		},
		{
			Code: NoAddress, Severity: Warn, Title: "no reachable address",
			Effect:  "This container (or API backend) is not used as a backend; the service keeps its other backends, or answers 503 `no-healthy-backend` if it has none.",
			Fix:     "Attach the container to a network Levee can reach (see `<prefix>.network`); an API backend needs an `address`.",
			Example: "a container running with --network none",
		},
		{
			Code: UnknownProtocol, Severity: Warn, Title: "unknown protocol",
			Effect:  "Labels under this protocol are ignored (only `http` is routed today); the API answers 422.",
			Fix:     "Use `http` in the label key (`<prefix>.http.<service>.<field>`), or `\"protocol\": \"Http\"` in the API.",
			Example: "levee.tcp.db.port=5432",
		},
		{
			Code: UnknownKey, Severity: Warn, Title: "unknown key",
			Effect:  "The label or JSON field is ignored; everything else applies. The hint suggests the closest known key; for a Traefik or Sōzune key (`tls`, `loadbalancer.server.port`) it says what Levee calls it, or that Levee does not support it (see docs/migrating.md). An unknown key under an access policy is not W013 but E005 (or E006), and the route denies.",
			Fix:     "Correct the key: keys are camelCase in labels (`circuitBreaker.minRequests`) and snake_case in the API (`config.circuit_breaker.min_requests`); they are read in any case, so only the spelling matters.",
			Example: "levee.http.app.circuitBreaker.treshold=0.5   # did you mean circuitBreaker.threshold?",
		},
		{
			Code: BadMethod, Severity: Warn, Title: "invalid HTTP method",
			Effect:  "The invalid method is dropped from the list; if none is left the route accepts every method.",
			Fix:     "Use standard method names: GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT, TRACE (any case).",
			Example: "levee.http.app.methods=GET,PSOT",
		},
		{
			Code: RouteCollision, Severity: Warn, Title: "route collision",
			Effect:  "Two services claim the same host and path (HTTP), the same listener or server name (TCP), or the same listener (UDP). Both get this diagnostic; the one with the higher priority wins, then the oldest (container or API creation time), then the lower id. The other is not routed there.",
			Fix:     "Give the services different hosts or paths (listeners or server names), or set `priority` to make the intended winner explicit.",
			Example: "levee.http.a.host=app.example.com and levee.http.b.host=app.example.com",
		},
		{
			Code: BadHealthCheck, Severity: Warn, Title: "invalid health-check setting",
			Effect:  "That health-check field falls back to its default; health checking stays on.",
			Fix:     "See docs/labels.md for the `healthCheck.*` fields: path starts with `/`, status is a status list (`200-399`), timeout and interval are positive durations, rise and fall are whole numbers >= 1.",
			Example: "levee.http.app.healthCheck.interval=often",
		},
		{
			Code: BadPassiveHealth, Severity: Warn, Title: "invalid passive-health setting",
			Effect:  "That passive-health field falls back to its default (consecutiveFailures 5, ejectTime 10s, maxEjectTime 5m or ejectTime if longer, maxEjectedShare 0.5); passive ejection stays on.",
			Fix:     "See docs/labels.md for the `passiveHealth.*` fields: consecutiveFailures is a whole number from 1 to 1000, ejectTime and maxEjectTime are positive durations with maxEjectTime >= ejectTime, maxEjectedShare is a number in (0, 1].",
			Example: "levee.http.app.passiveHealth.maxEjectedShare=2",
		},
		{
			Code: BadLoadBalancer, Severity: Warn, Title: "unknown load-balancing policy",
			Effect:  "The policy falls back to round_robin.",
			Fix:     "Use round_robin (rr), random, power_of_two (p2c) or least_connections (leastconn).",
			Example: "levee.http.app.loadBalancer=fastest",
		},
		{
			Code: BadRetry, Severity: Warn, Title: "invalid retry setting",
			Effect:  "The retry setting falls back to its default (1 attempt: no retry).",
			Fix:     "`retry.attempts` is the total number of tries, a whole number from 1 to 10.",
			Example: "levee.http.app.retry.attempts=0",
		},
		{
			Code: BadBodyLimit, Severity: Warn, Title: "invalid request body limit",
			Effect:  "maxRequestBodyBytes falls back to its default: no limit on the request body.",
			Fix:     "Give a size of at least one byte: plain bytes (10485760) or a number with KiB, MiB, GiB (binary) or KB, MB, GB (decimal), such as 10MiB.",
			Example: "levee.http.app.maxRequestBodyBytes=ten megs",
		},
		{
			Code: BadBodyBuffer, Severity: Warn, Title: "invalid retry body buffer",
			Effect:  "retry.bodyBuffer falls back to its default, 64KiB: larger bodies are sent once and never retried.",
			Fix:     "Give a size from 1 byte to 16MiB: plain bytes (1048576) or a number with KiB, MiB (binary) or KB, MB (decimal), such as 1MiB.",
			Example: "levee.http.app.retry.bodyBuffer=1GiB",
		},
		{
			Code: BadCircuitBreaker, Severity: Warn, Title: "invalid circuit-breaker setting",
			Effect:  "That one breaker field falls back to its default; the breaker stays on with every other field as given.",
			Fix:     "See docs/labels.md for the `circuitBreaker.*` fields and their ranges: ratios are in (0,1], counts are whole numbers >= 1, durations are whole seconds or Go durations, status lists look like `500,502-504` or `5xx`.",
			Example: "levee.http.app.circuitBreaker.threshold=1.5",
		},
		{
			Code: BadWeight, Severity: Warn, Title: "invalid weight",
			Effect:  "The weight falls back to 100.",
			Fix:     "Use a whole number from 0 to 1000000; 0 keeps the backend wired but never picked.",
			Example: "levee.http.app.weight=-3",
		},
		{
			Code: BadBool, Severity: Warn, Title: "invalid boolean",
			Effect:  "The field falls back to its default (for `<prefix>.enable`: the --docker-exposed-by-default setting).",
			Fix:     "Use true/false, 1/0, yes/no or on/off, in any case.",
			Example: "levee.http.app.stripPrefix=yep",
		},
		{
			Code: BadPath, Severity: Warn, Title: "invalid path",
			Effect:  "The path falls back to `/` (the route matches every path of its hosts).",
			Fix:     "Use a path prefix starting with `/`, without `?`, `#`, spaces or `..` segments, e.g. `/api`.",
			Example: "levee.http.app.path=/api?x=1",
		},
		{
			Code: BadPathRegex, Severity: Warn, Title: "invalid path regular expression",
			Effect:  "The regular expression is ignored: the route matches on host and path prefix only.",
			Fix:     "Use a valid Go (RE2) regular expression; look-arounds and back-references are not supported.",
			Example: "levee.http.app.pathRegex=^/api/(v1|v2",
		},
		{
			Code: ReplicasDisagree, Severity: Warn, Title: "replicas disagree on their labels",
			Effect:  "Containers of one service (same service name and hosts) carry different labels; the oldest container's labels apply to all of them. The diagnostic names the differing keys.",
			Fix:     "Give every replica the same labels (recreate the stale containers, e.g. `docker compose up -d`).",
			Example: "replica 1: levee.http.app.weight=1, replica 2: levee.http.app.weight=5",
		},
		{
			Code: BadHost, Severity: Warn, Title: "invalid host name",
			Effect:  "The invalid host is dropped; the service keeps its other hosts (with none left it is not routed: E002).",
			Fix:     "Use host names without scheme, path or port, e.g. `app.example.com`; a leading `*.` is a wildcard for sub-domains.",
			Example: "levee.http.app.host=https://app.example.com/",
		},
		{
			Code: BadRewrite, Severity: Warn, Title: "invalid path rewrite",
			Effect:  "The rewrite is ignored: the path is forwarded without adding a prefix.",
			Fix:     "`addPrefix` must start with `/` and contain no `?`, `#` or spaces.",
			Example: "levee.http.app.addPrefix=v1",
		},
		{
			Code: NoBackends, Severity: Warn, Title: "entrypoint has no backends",
			Effect:  "The entrypoint is routed but answers 503 with `X-Levee-Diagnostic: no-healthy-backend` until backends are given.",
			Fix:     "Add `backends: [{\"address\": …, \"port\": …}]` to the payload (PUT the entrypoint again).",
			Example: `{"name":"app","config":{"hostnames":["app.example.com"]}}`,
		},
		{
			Code: DuplicateKey, Severity: Warn, Title: "field given twice",
			Effect:  "A field is set both by its name and by an alias; the canonical name wins and the alias is ignored.",
			Fix:     "Keep only one of them (e.g. `path` rather than `prefix`; `cooldown` rather than `cooldown_secs`).",
			Example: "levee.http.app.path=/api and levee.http.app.prefix=/v1",
		},
		{
			Code: PathDefaulted, Severity: Info, Title: "path normalised",
			Effect:  "A path given without a leading `/` (or with a trailing one, a run of slashes or a `;` parameter, which no request path holds once normalised) was normalised, e.g. `api/` → `/api`, `//admin;x` → `/admin`; the route uses the normalised form.",
			Fix:     "Nothing to fix; write the normalised form to silence this.",
			Example: "levee.http.app.path=api/",
		},
		{
			Code: PortDefaulted, Severity: Info, Title: "port chosen by Levee",
			Effect:  "No port label: Levee used the container's only exposed port, else its lowest exposed port, else 80. The message says which and why.",
			Fix:     "Set `<prefix>.http.<service>.port` to choose explicitly.",
			Example: "a container exposing 8080 and 9090 with no port label (8080 is used)",
		},
		{
			Code: HealthTimeoutAdjusted, Severity: Info, Title: "health-check timeout shortened",
			Effect:  "A probe must end before the next one is due, so a health-check timeout longer than the interval (written, or the 5s default against a shorter interval) is shortened to the smaller of 2s and the interval. The route runs with the shortened timeout, and every view (`GET /entrypoints`, the stored payload) shows it.",
			Fix:     "Set `healthCheck.timeout` at most `healthCheck.interval`.",
			Example: "levee.http.app.healthCheck.interval=3s   # the 5s default timeout becomes 2s",
		},
		{
			Code: TraefikLabels, Severity: Info, Title: "Traefik labels but no Levee labels",
			Effect:  "Levee does not read `traefik.*` labels: nothing of the container is routed by them (with --docker-exposed-by-default it is enabled but defines no service). Reported once per container that carries `traefik.*` labels and no `<prefix>.*` label; a container that has both gets no I003.",
			Fix:     "Write the labels under Levee's prefix: docs/migrating.md maps Traefik's labels to Levee's (`rule=Host(...)` → `host`, `loadbalancer.server.port` → `port`, …). Nothing to fix if the container is meant for Traefik only.",
			Example: "traefik.enable=true, traefik.http.routers.app.rule=Host(`app.example.com`)   # and no levee.* label",
		},
	}
}
