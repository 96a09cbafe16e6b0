package diagnostics

// Codes of TLS, listeners and certificates, numbers 040-049.
const (
	// BadTLS is an invalid tls, tls.redirect or tls.hsts value.
	BadTLS Code = "W040"
	// BadListeners is an invalid listener name in a route's listeners.
	BadListeners Code = "W041"
	// TLSFieldIgnored is tls.redirect or tls.hsts on a route without tls.
	TLSFieldIgnored Code = "W042"
	// HSTSHeaderOverride is a Strict-Transport-Security header set by
	// the headers policy; HSTSPreloadUnmet is tls.hsts.preload without
	// what the preload list requires.
	HSTSHeaderOverride Code = "W084"
	HSTSPreloadUnmet   Code = "W085"
	// BadCertificate is a static certificate file Levee cannot use.
	BadCertificate Code = "W043"
	// ACMEFailed is a certificate order or renewal that failed.
	ACMEFailed Code = "W044"
	// WildcardNeedsDNS is a wildcard host on a TLS route without a static
	// certificate for it: ACME would need DNS-01, which is not enabled.
	WildcardNeedsDNS Code = "W045"
	// UnknownListener is a route naming a listener levee serve does not
	// declare.
	UnknownListener Code = "W046"
	// NoTLSListener is a TLS route while no TLS listener is declared.
	NoTLSListener Code = "W047"
)

// tlsEntries are the codes of TLS and certificates (codes 040-049).
func tlsEntries() []Entry {
	return []Entry{
		{
			Code: BadTLS, Severity: Warn, Title: "invalid TLS setting",
			Effect:  "That field falls back to its default: `tls` to false (the route is served on plain listeners), `tls.redirect` to the value of `tls`, `tls.hsts` to 0 (no Strict-Transport-Security header).",
			Fix:     "`tls` and `tls.redirect` are booleans; `tls.hsts` is a max-age in whole seconds between 0 and 63072000 (two years), or a duration (`8760h`).",
			Example: "levee.http.app.tls.hsts=forever",
		},
		{
			Code: BadListeners, Severity: Warn, Title: "invalid listener name",
			Effect:  "The invalid name is dropped; if none is left the route serves on every listener of its kind (plain, or TLS with `tls=true`).",
			Fix:     "Name listeners as `levee serve --listen name=addr[,tls]` declares them: lower-case letters, digits, `-` and `_`.",
			Example: "levee.http.app.listeners=web secure",
		},
		{
			Code: TLSFieldIgnored, Severity: Warn, Title: "TLS field on a plain route",
			Effect:  "`tls.redirect` and `tls.hsts` only apply to a route with `tls=true`; on this route they are ignored.",
			Fix:     "Add `tls=true` to serve the route over HTTPS, or remove the field.",
			Example: "levee.http.app.tls.hsts=31536000   # without levee.http.app.tls=true",
		},
		{
			Code: HSTSHeaderOverride, Severity: Warn, Title: "Strict-Transport-Security set as a custom header",
			Effect:  "The header is sent as set, on every answer: it replaces the one `tls.hsts` writes, and it goes over plain HTTP too, where RFC 6797 7.2 says a host must not send it (an attacker can strip or forge it there).",
			Fix:     "Remove `headers.customResponseHeaders.Strict-Transport-Security` (or `addResponseHeaders`) and set `tls.hsts` with `tls.hsts.includeSubDomains` and `tls.hsts.preload`: Levee then sends the header on HTTPS answers only.",
			Example: "levee.http.app.headers.customResponseHeaders.Strict-Transport-Security=max-age=31536000",
		},
		{
			Code: HSTSPreloadUnmet, Severity: Warn, Title: "HSTS preload without its requirements",
			Effect:  "The header is sent as configured, with `preload`, but the browsers' preload list (hstspreload.org) refuses a host whose header lacks `includeSubDomains` or has a max-age under a year.",
			Fix:     "Set `tls.hsts.includeSubDomains=true` and `tls.hsts` to at least 31536000 (one year), or drop `tls.hsts.preload`.",
			Example: "levee.http.app.tls.hsts=86400 with levee.http.app.tls.hsts.preload=true",
		},
		{
			Code: BadCertificate, Severity: Warn, Title: "unusable certificate file",
			Effect:  "The file (or pair) is not loaded: its host names get their certificate from ACME or the default certificate instead. Every other certificate is unaffected; a fixed file is picked up at the next poll of --tls-cert-dir and --tls-cert.",
			Fix:     "Give each certificate chain (`name.crt` or `name.pem`, PEM) its private key in `name.key` (or in the same .pem; with --tls-cert, CERT,KEY), matching, readable by Levee, not expired, and naming at least one valid DNS name.",
			Example: "certs/shop.crt without certs/shop.key",
		},
		{
			Code: ACMEFailed, Severity: Warn, Title: "certificate order failed",
			Effect:  "The host keeps its current certificate (an older one, else the default certificate, which clients will not trust). Levee retries with backoff; the message names the host, the challenge, the CA's error and the next try.",
			Fix:     "Check that the host's DNS points at Levee, that ports 80 (HTTP-01) and 443 (TLS-ALPN-01) reach Levee's listeners, and the CA's error; for a private CA, --acme-ca and --acme-ca-root. For DNS-01 (challenge dns-01), that the DNS provider's credentials may write TXT records in the host's zone and that --acme-dns-resolvers see it.",
			Example: "shop.example.com resolves to another address",
		},
		{
			Code: WildcardNeedsDNS, Severity: Warn, Title: "wildcard host needs DNS-01 or a static certificate",
			Effect:  "A wildcard certificate can only be issued through the DNS-01 challenge, which is not enabled (no --acme-dns-provider, or dns-01 left out of --acme-challenges): the wildcard host is served with the default certificate until DNS-01 is enabled or a static certificate covers it.",
			Fix:     "Give --acme-dns-provider with its credentials (docs/tls.md, DNS-01), with dns-01 in --acme-challenges if you set it; or put a certificate for the wildcard and its key in --tls-cert-dir; or list the sub-domains as hosts.",
			Example: "levee.http.app.host=*.example.com with levee.http.app.tls=true",
		},
		{
			Code: UnknownListener, Severity: Warn, Title: "route names an unknown listener",
			Effect:  "The route serves on the listeners it names that exist; when none of them does, it is not served at all (404 everywhere).",
			Fix:     "Use the names `levee serve --listen name=addr[,tls]` declares (`web` is the listener of --http-listen), or declare the listener.",
			Example: "levee.http.app.listeners=websecure   # but levee serve has no --listen websecure=…",
		},
		{
			Code: NoTLSListener, Severity: Warn, Title: "TLS route without a TLS listener",
			Effect:  "Nothing serves the route over HTTPS, and plain listeners do not redirect its requests (a redirect goes only to a TLS listener the route serves on): they answer 404.",
			Fix:     "Declare a TLS listener (`levee serve --listen websecure=:443,tls`), or remove tls=true.",
			Example: "levee.http.app.tls=true   # levee serve started with --http-listen only",
		},
	}
}
