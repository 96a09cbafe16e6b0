package diagnostics

// Codes of the connection to backends (scheme, HTTPS to backends), numbers
// 004-008.
const (
	// BadScheme is an invalid scheme value.
	BadScheme Code = "W004"
	// BadBackendTLS is a tls.serverName, tls.ca or tls.clientCert value,
	// or a file they name, that Levee cannot use.
	BadBackendTLS Code = "W005"
	// InsecureBackendTLS is tls.insecureSkipVerify=true.
	InsecureBackendTLS Code = "W006"
	// BackendTLSIgnored is a backend TLS field on a route whose scheme is
	// http.
	BackendTLSIgnored Code = "W007"
)

// backendTLSEntries are the codes of the connection to backends (codes
// 004-008).
func backendTLSEntries() []Entry {
	return []Entry{
		{
			Code: BadScheme, Severity: Warn, Title: "invalid backend scheme",
			Effect:  "`scheme` falls back to `http`: the route's backends are spoken to in plain HTTP/1.1.",
			Fix:     "Use `http` (the default), `https`, `h2c` (cleartext HTTP/2) or `h2` (HTTP/2 over TLS).",
			Example: "levee.http.app.scheme=grpc",
		},
		{
			Code: BadBackendTLS, Severity: Warn, Title: "unusable backend TLS setting",
			Effect:  "The route never talks to its backends without the verification asked for: it answers every request 502 with `X-Levee-Diagnostic: backend-tls-misconfigured` until the setting is fixed. A bad value is never replaced by a weaker default.",
			Fix:     "`tls.ca` is a PEM file of CA certificates readable by Levee; `tls.clientCert` is CERT[,KEY] as --tls-cert takes it (a PEM chain and its key, KEY left out when CERT holds both), matching; `tls.serverName` is a DNS name or IP address.",
			Example: "levee.http.app.tls.ca=/certs/missing.pem",
		},
		{
			Code: InsecureBackendTLS, Severity: Warn, Title: "backend certificate not verified",
			Effect:  "The route's backends are spoken to over TLS without verifying their certificate: anyone on the path to the backend can read and change the traffic. The connection is still encrypted.",
			Fix:     "Give the backend's CA with `tls.ca` (and `tls.serverName` when the certificate names another host) and remove `tls.insecureSkipVerify`.",
			Example: "levee.http.app.tls.insecureSkipVerify=true",
		},
		{
			Code: BackendTLSIgnored, Severity: Warn, Title: "backend TLS field on a plain backend",
			Effect:  "`tls.serverName`, `tls.ca`, `tls.clientCert` and `tls.insecureSkipVerify` only apply with `scheme=https` or `scheme=h2`; on this route they are ignored and the backends are spoken to without TLS.",
			Fix:     "Add `scheme=https` (or `h2`), or remove the field.",
			Example: "levee.http.app.tls.ca=/certs/ca.pem   # without levee.http.app.scheme=https",
		},
	}
}
