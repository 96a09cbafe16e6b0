package diagnostics

// Codes of the access policies (050-059). A security policy with a bad
// value never fails open: basic auth, forward auth and the IP allow-list
// deny every request until the value is fixed.
const (
	BadBasicAuth   Code = "W050"
	BadForwardAuth Code = "W051"
	BadIPAllowList Code = "W052"
	BadRateLimit   Code = "W053"
	BadInFlight    Code = "W054"
	WeakBasicHash  Code = "W055"
	MixedHashCosts Code = "W056"
	// UnreadAccessKey and MisspelledAccessPolicy are errors: the route is
	// routed, but denies every request until the key is fixed.
	UnreadAccessKey        Code = "E005"
	MisspelledAccessPolicy Code = "E006"
)

// policyEntries are the codes of traffic policies (codes 050-069); their
// Code constants are declared here too. The access policies' block
// (050-059) comes first; the transform policies' (060-069) follows.
func policyEntries() []Entry {
	return []Entry{
		{
			Code: UnreadAccessKey, Severity: Error, Title: "unknown key in an access policy",
			Effect:  "The route denies every request (403, `X-Levee-Diagnostic: policy-misconfigured`) until the key is fixed: a key under basicAuth, forwardAuth, ipAllowList, rateLimit or inFlight that Levee does not know may be the setting that protects the route, so the route is never served without it. Keys are read in any case (`basicauth.users` is `basicAuth.users`); this is a key that is not a field in any case.",
			Fix:     "Write the field's name as docs/labels.md lists it (the hint names the closest one), or remove the key.",
			Example: "levee.http.app.basicAuth.userz=admin:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC",
		},
		{
			Code: MisspelledAccessPolicy, Severity: Error, Title: "misspelled access policy",
			Effect:  "The route denies every request (403, `X-Levee-Diagnostic: policy-misconfigured`) until the key is fixed: the key's group is not a Levee policy but is close to an access policy's name (`basicAuh`), or is another proxy's name of one (Traefik's `ipWhiteList`, `inFlightReq`, `digestAuth`), so the operator meant to protect the route.",
			Fix:     "Write the policy's name as docs/labels.md lists it (the hint names it): basicAuth, forwardAuth, ipAllowList, rateLimit or inFlight.",
			Example: "levee.http.app.basicAuh.users=admin:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC",
		},
		{
			Code: BadBasicAuth, Severity: Warn, Title: "invalid basic auth",
			Effect:  "The route denies every request (403, `X-Levee-Diagnostic: policy-misconfigured`) until the value is fixed: a users line that is not `name:hash`, a hash Levee does not verify (plain text, crypt, `$1$`, a malformed one), a bcrypt cost above 14, or a users file that cannot be read (missing, not a regular file, larger than 1 MiB) never lets a request through. A bad `realm` falls back to `levee`, a bad `removeHeader` to false.",
			Fix:     "Write each user as `name:hash` with a bcrypt hash of cost 4-14 (`htpasswd -nbB name password`); in a compose file escape every `$` of the hash as `$$`. Point `usersFile` at a readable regular file of such lines, at most 1 MiB.",
			Example: "levee.http.app.basicAuth.users=admin:$2y$31$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC",
		},
		{
			Code: BadForwardAuth, Severity: Warn, Title: "invalid forward auth",
			Effect:  "A bad `address` makes the route deny every request (`X-Levee-Diagnostic: policy-misconfigured`); a bad header name is dropped from its list; a bad `timeout` falls back to 5s and a bad `trustForwardHeader` to false.",
			Fix:     "Give `address` as an absolute http:// or https:// URL of the auth service, header lists as comma-separated header names, `timeout` as a positive duration.",
			Example: "levee.http.app.forwardAuth.address=auth:9000/verify",
		},
		{
			Code: BadIPAllowList, Severity: Warn, Title: "invalid IP allow-list",
			Effect:  "A source range that is neither a CIDR prefix nor an address makes the route deny every request (403, `X-Levee-Diagnostic: policy-misconfigured`) rather than allow all; a bad `depth` falls back to 0 (the --trusted-proxies rule).",
			Fix:     "List CIDR prefixes or addresses, comma-separated (`10.0.0.0/8,192.0.2.7`); `depth` is a whole number from 0.",
			Example: "levee.http.app.ipAllowList.sourceRange=10.0.0.0/33",
		},
		{
			Code: BadRateLimit, Severity: Warn, Title: "invalid rate limit",
			Effect:  "A bad `average` leaves the route without a rate limit (an average is required, and there is no sensible default); a bad `period` falls back to 1s, `burst` to 1, `sourceCriterion` to `ip`.",
			Fix:     "`average` is a whole number of requests (1-1000000000) per `period` (a positive duration); `burst` a whole number from 1; `sourceCriterion` one of `ip`, `host`, `header:<name>`.",
			Example: "levee.http.app.rateLimit.average=-5",
		},
		{
			Code: BadInFlight, Severity: Warn, Title: "invalid in-flight limit",
			Effect:  "A bad `amount` leaves the route without an in-flight limit; a bad `sourceCriterion` falls back to `ip`.",
			Fix:     "`amount` is a whole number of requests (1-1000000) under way at once per source; `sourceCriterion` one of `ip`, `host`, `header:<name>`.",
			Example: "levee.http.app.inFlight.amount=zero",
		},
		{
			Code: WeakBasicHash, Severity: Warn, Title: "weak basic-auth hash",
			Effect:  "The user can log in: the `$apr1$` (MD5-crypt, what `htpasswd -nb` writes) or `{SHA}` (unsalted SHA-1) hash is verified, but either is cheap to brute force once the hash leaks (a stolen users file, a backup). Failed checks still go through the process-wide password-check slots and the failure budget, and cost as much as the route's most expensive hash.",
			Fix:     "Re-create the line with a bcrypt hash: `htpasswd -nbB name password` (in a compose file write each `$` as `$$`).",
			Example: "levee.http.app.basicAuth.users=admin:$apr1$H6uskkkW$5ZFNT.MKp/uF5QZ.U5Pld0",
		},
		{
			Code: MixedHashCosts, Severity: Warn, Title: "basic-auth hashes of different costs",
			Effect:  "Nothing is refused. So that timing does not tell which user names exist, every failed check costs the route's most expensive hash (a wrong password for a cheap hash is followed by a dummy check of the most expensive one), so cheap hashes save no CPU on failures.",
			Fix:     "Re-hash every user of the route with one bcrypt cost: `htpasswd -nbB -C 10 name password`.",
			Example: "levee.http.app.basicAuth.users=alice:$2y$04$…,bob:$2y$12$…",
		},
	}
}

// The transform policies' codes (060-069): headers and CORS, compression,
// redirects, path rewrites and sticky sessions.
const (
	BadHeaders      Code = "W060"
	BadCORS         Code = "W061"
	BadCompress     Code = "W062"
	BadRedirect     Code = "W063"
	BadPathRewrite  Code = "W064"
	BadSticky       Code = "W065"
	ReservedHeader  Code = "W066"
	RewriteConflict Code = "W067"
)

// transformPolicyEntries are the catalogue entries of codes 060-069.
func transformPolicyEntries() []Entry {
	return []Entry{
		{Code: BadHeaders, Severity: Warn, Title: "invalid header policy setting",
			Effect:  "The header (or the setting) is ignored; the route's other headers still apply.",
			Fix:     "Use a valid header name (letters, digits and !#$%&'*+-.^_`|~) and a value without control characters; referrerPolicy takes one of the W3C Referrer-Policy tokens.",
			Example: "levee.http.app.headers.referrerPolicy=sometimes"},
		{Code: BadCORS, Severity: Warn, Title: "invalid CORS setting",
			Effect:  "The value is ignored (an origin is dropped; credentials with the wildcard origin are refused): Levee adds no CORS header for what it dropped, so browsers refuse those cross-origin reads (fails closed).",
			Fix:     "List origins as scheme://host[:port] or *, methods as HTTP methods, headers as header names; allowCredentials needs explicit origins.",
			Example: "levee.http.app.cors.allowOrigins=app.example.com"},
		{Code: BadCompress, Severity: Warn, Title: "invalid compression setting",
			Effect:  "An unknown encoding is dropped (none left: the default zstd,br,gzip); a bad size or content type falls back to the default.",
			Fix:     "Encodings are zstd, br and gzip; minResponseBodyBytes is 0 or more; excludedContentTypes are media types such as image/png.",
			Example: "levee.http.app.compress.encodings=deflate"},
		{Code: BadRedirect, Severity: Warn, Title: "invalid redirect",
			Effect:  "The redirect is not installed: requests go to the backend as if it were not set.",
			Fix:     "redirectScheme.scheme is http or https and .port 1-65535; redirectRegex.regex is a Go (RE2) regular expression and .replacement is set.",
			Example: "levee.http.app.redirectRegex.regex=^http://(.*"},
		{Code: BadPathRewrite, Severity: Warn, Title: "invalid path rewrite",
			Effect:  "The rewrite is not installed: the path goes to the backend as before (stripPrefix and addPrefix still apply).",
			Fix:     "replacePath starts with / and has no query, fragment or spaces; replacePathRegex.regex is a Go (RE2) regular expression and .replacement starts with / or $.",
			Example: "levee.http.app.replacePathRegex.regex=^/api/(.*"},
		{Code: BadSticky, Severity: Warn, Title: "invalid sticky-session setting",
			Effect:  "The setting falls back to its default (cookie levee_sticky, sameSite unset); the route is still sticky.",
			Fix:     "The cookie name is an RFC 6265 token; sameSite is none, lax or strict (none needs secure=true in browsers).",
			Example: "levee.http.app.sticky.cookie.sameSite=sometimes"},
		{Code: ReservedHeader, Severity: Warn, Title: "header Levee owns",
			Effect:  "The header is not set or removed: hop-by-hop headers (Connection, Keep-Alive, Proxy-*, TE, Trailer, Transfer-Encoding, Upgrade), Host and Content-Length describe one connection or the message framing, which Levee manages.",
			Fix:     "Remove the header from headers.customRequestHeaders / customResponseHeaders; the backend sees the client's Host.",
			Example: "levee.http.app.headers.customRequestHeaders.Host=other.example.com"},
		{Code: RewriteConflict, Severity: Warn, Title: "path rewrites that exclude each other",
			Effect:  "replacePath replaces the whole path: replacePathRegex and stripPrefix are not applied beside it (addPrefix still is); replacePathRegex beside stripPrefix runs on the client's path, so stripPrefix is dropped.",
			Fix:     "Keep one of replacePath, replacePathRegex and stripPrefix; write the strip into the regex (^/api(/.*) → $1).",
			Example: "levee.http.app.stripPrefix=true + levee.http.app.replacePath=/x"},
	}
}
