package proxy

// Diagnostic header values: X-Levee-Diagnostic says why Levee itself
// answered instead of a backend.
const (
	DiagnosticNoRoute            = "no-route"
	DiagnosticNoHealthyBackend   = "no-healthy-backend"
	DiagnosticBackendUnreachable = "backend-unreachable"
	DiagnosticBackendTimeout     = "backend-timeout"
	DiagnosticCircuitOpen        = "circuit-open"
	// DiagnosticBadPath: the request path cannot be brought into normal
	// form (a dot segment, a backslash, an encoded separator, a control
	// character; see pathform.Normalize), so the route would be chosen on a
	// path the backend may read differently.
	DiagnosticBadPath = "bad-path"
	// DiagnosticBadHeader: a request field could be read two ways by a
	// policy and a backend (Authorization twice, or with
	// --underscore-headers=reject a name with an underscore).
	DiagnosticBadHeader = "bad-header"
	// DiagnosticBadRequestBody: the client's request body could not be
	// read (malformed chunked encoding, cut short).
	DiagnosticBadRequestBody = "bad-request-body"
	// DiagnosticBadRequest: the HTTP server refused the request itself
	// (malformed head, head too large, unsupported protocol version or
	// transfer coding, failed expectation); set by levee serve on
	// router/httpx/server's refusals.
	DiagnosticBadRequest = "bad-request"
	// DiagnosticBadUpgrade: the backend answered 101 Switching Protocols
	// to a request that did not ask for that protocol.
	DiagnosticBadUpgrade = "bad-upgrade"
	// DiagnosticBackendTLS: the TLS handshake with the backend failed
	// (its certificate is not trusted, names another host or expired; it
	// refused Levee's client certificate; it did not finish in time). A
	// backend failure, logged with its reason.
	DiagnosticBackendTLS = "backend-tls"
	// DiagnosticBackendNoH2: the backend of a scheme=h2 route finished
	// the TLS handshake without selecting h2 in ALPN, or refused it with
	// no_application_protocol (RFC 7301 3.2). A backend failure, logged.
	DiagnosticBackendNoH2 = "backend-no-h2"
	// DiagnosticBackendRefusedStream: an HTTP/2 backend took the request
	// on no stream (it refused each one, or granted none), and no other
	// backend or no retry budget was left; 503 with a Retry-After. The
	// request was not processed (RFC 9113 8.7).
	DiagnosticBackendRefusedStream = "backend-refused-stream"
	// DiagnosticBackendTLSMisconfigured: the route's backend TLS settings
	// (tls.ca, tls.clientCert, tls.serverName) cannot be used, so it does
	// not talk to its backends at all rather than verify less (W005).
	DiagnosticBackendTLSMisconfigured = "backend-tls-misconfigured"
	// DiagnosticClientTimeout: the client sent its request body too
	// slowly (RequestBodyTimeout, RequestBodyMinRate).
	DiagnosticClientTimeout = "client-timeout"
	// DiagnosticBodyTooLarge: the request body is larger than the route's
	// maxRequestBodyBytes (413).
	DiagnosticBodyTooLarge = "body-too-large"
)

// HeaderDiagnostic is the response header naming why Levee answered itself.
const HeaderDiagnostic = "X-Levee-Diagnostic"

// statusClientGone is logged (never sent) when the client went away
// before a response could be written, as nginx does.
const statusClientGone = 499

// Read-only header values shared by all requests: assigning them to a
// header map avoids allocating a slice per request. Nothing writes to
// header values in place.
var (
	valueTextPlain  = []string{"text/plain; charset=utf-8"}
	valueNoSniff    = []string{"nosniff"}
	valueHTTP       = []string{"http"}
	valueHTTPS      = []string{"https"}
	valueUpgrade    = []string{"Upgrade"}
	valueClose      = []string{"close"}
	valueTrailers   = []string{"trailers"}
	valueEmpty      = []string{""}
	valueAllow      = []string{"GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE"}
	valueDiagnostic = map[string][]string{
		DiagnosticNoRoute:            {DiagnosticNoRoute},
		DiagnosticNoHealthyBackend:   {DiagnosticNoHealthyBackend},
		DiagnosticBackendUnreachable: {DiagnosticBackendUnreachable},
		DiagnosticBackendTimeout:     {DiagnosticBackendTimeout},
		DiagnosticCircuitOpen:        {DiagnosticCircuitOpen},
		DiagnosticBadPath:            {DiagnosticBadPath},
		DiagnosticBadHeader:          {DiagnosticBadHeader},
		DiagnosticBadRequestBody:     {DiagnosticBadRequestBody},
		DiagnosticBadUpgrade:         {DiagnosticBadUpgrade},
		DiagnosticClientTimeout:      {DiagnosticClientTimeout},
		DiagnosticBackendTLS:         {DiagnosticBackendTLS},
		DiagnosticBackendNoH2:        {DiagnosticBackendNoH2},

		DiagnosticBackendRefusedStream: {DiagnosticBackendRefusedStream},

		DiagnosticBackendTLSMisconfigured: {DiagnosticBackendTLSMisconfigured},
		DiagnosticBodyTooLarge:            {DiagnosticBodyTooLarge},
	}
)
