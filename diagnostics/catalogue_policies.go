package diagnostics

// Codes of named policies: a policy declared once under a name
// (levee.policy.<name>.<group>.<field>, or PUT /policies/<name>) and
// referenced by routes (policies=<name>,...). A reference can only be
// checked where every source's policies are known, so E007 and W039 come
// from the router when it builds a snapshot; W048 and W049 come from the
// validator.
const (
	// UnknownPolicy: a route references a policy no source declares (or a
	// name that cannot be one); the route denies every request.
	UnknownPolicy Code = "E007"
	// PolicyConflict: one policy name is declared twice with different
	// content.
	PolicyConflict Code = "W039"
	// NotAPolicyField: a named policy gives a field that is not a policy
	// (host, port, retry...).
	NotAPolicyField Code = "W048"
	// BadPolicyName: a policy label or API name is not a valid policy
	// name.
	BadPolicyName Code = "W049"
)

// namedPolicyEntries are the codes of named policies; their Code constants
// are declared here too.
func namedPolicyEntries() []Entry {
	return []Entry{
		{
			Code: UnknownPolicy, Severity: Error, Title: "unknown policy reference",
			Effect:  "The route denies every request (403, `X-Levee-Diagnostic: policy-misconfigured`) until the reference is fixed or a policy of that name is declared: the missing policy may be the one that protects the route (an auth or an allow-list), so the route is never served without it. The hint names the closest declared policy.",
			Fix:     "Name a declared policy in `policies` (the hint names the closest one), or declare it: `levee.policy.<name>.<group>.<field>` on any container, or `PUT /policies/<name>`.",
			Example: "levee.http.app.policies=office-onyl",
		},
		{
			Code: PolicyConflict, Severity: Warn, Title: "policy declared twice with different content",
			Effect:  "When the two declarations differ in an access group (basicAuth, forwardAuth, ipAllowList, rateLimit, inFlight), every route that uses the policy denies every request (403, `X-Levee-Diagnostic: policy-misconfigured`): Levee cannot tell which protection was meant. When they differ only in other groups, the oldest declaration (container creation or API creation time, then source and object name) applies everywhere and the other is ignored.",
			Fix:     "Declare the policy in one place (the proxy's own container, a file, or the API), or give the declarations the same content.",
			Example: "levee.policy.office-only.ipAllowList.sourceRange=10.0.0.0/8 on one container, =192.168.0.0/16 on another",
		},
		{
			Code: NotAPolicyField, Severity: Warn, Title: "field is not a policy",
			Effect:  "The field is ignored: a named policy holds the policy groups only (basicAuth, forwardAuth, ipAllowList, rateLimit, inFlight, headers, cors, compress, redirectScheme, redirectRegex, replacePath, replacePathRegex, sticky, maxRequestBodyBytes). Routing fields (host, path, port), balancing, retries, health checks and the breaker belong to each route.",
			Fix:     "Move the field to the routes (`levee.http.<service>.<field>`), or remove it from the policy.",
			Example: "levee.policy.office-only.host=app.example.com",
		},
		{
			Code: BadPolicyName, Severity: Warn, Title: "invalid policy name",
			Effect:  "The labels of that policy are ignored (an API write is refused with 422): a name is lower-case letters, digits, `_` and `-`, starting with a letter or digit, at most 128 characters. A route that references the policy denies (E007).",
			Fix:     "Rename the policy, in its labels and in every `policies` that references it.",
			Example: "levee.policy.Office Only.ipAllowList.sourceRange=10.0.0.0/8",
		},
	}
}
