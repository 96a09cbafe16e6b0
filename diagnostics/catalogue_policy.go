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
)

// policyEntries are the codes of traffic policies (codes 050-069); their
// Code constants are declared here too. The access policies' block
// (050-059) comes first; the transform policies' (060-069) follows.
func policyEntries() []Entry {
	return []Entry{
		{
			Code: BadBasicAuth, Severity: Warn, Title: "invalid basic auth",
			Effect:  "The route denies every request (403, `X-Levee-Diagnostic: policy-misconfigured`) until the value is fixed: a users line that is not `name:bcrypt-hash`, a hash of another kind (`$apr1$`, `{SHA}`, crypt, plain text) or a users file that cannot be read never lets a request through. A bad `realm` falls back to `levee`, a bad `removeHeader` to false.",
			Fix:     "Write each user as `name:hash` with a bcrypt hash (`htpasswd -nbB name password`); in a compose file escape every `$` of the hash as `$$`. Point `usersFile` at a readable file of such lines.",
			Example: "levee.http.app.basicAuth.users=admin:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/",
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
	}
}
