package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// accessPolicyFields are the rows of the policies that admit or refuse a
// request: basic and forward auth, IP allow-list, rate and in-flight
// limits. Setting any field of a policy turns it on. The names
// are Traefik's middleware options, camelCase (docs/migrating.md).
func accessPolicyFields() []Field {
	return []Field{
		// Basic auth.
		{Label: "basicAuth.users", JSON: "config.basic_auth.users", Kind: KindList, Default: "(none)", Code: diagnostics.BadBasicAuth,
			Doc:     "htpasswd lines `name:hash`, comma-separated: bcrypt of cost 4-14 (`htpasswd -nbB name password`), or for migration `$apr1$` and `{SHA}` (accepted with W055: weak); in a compose file write each `$` of a hash as `$$`. Requests without valid credentials get 401 (`unauthorized`). Plain text, another kind of hash or a cost above 14 makes the route deny every request (W050), never fail open.",
			Example: "admin:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC", set: setBasicUsers, get: inBasicAuth(func(b *BasicAuth) any { return nonNil(b.Users) })},
		{Label: "basicAuth.usersFile", JSON: "config.basic_auth.users_file", Kind: KindString, Default: "(none)", Code: diagnostics.BadBasicAuth,
			Doc:     "A file of more htpasswd lines (as `users`), one per line, read when the route is (re)built. A file that is missing, not a regular file or larger than 1 MiB makes the route deny every request (W050).",
			Example: "/etc/levee/htpasswd", set: setBasicUsersFile, get: omitEmpty(inBasicAuth(func(b *BasicAuth) any { return b.UsersFile }))},
		{Label: "basicAuth.realm", JSON: "config.basic_auth.realm", Kind: KindString, Default: DefaultRealm, Code: diagnostics.BadBasicAuth,
			Doc:     "The realm of the `WWW-Authenticate` challenge (RFC 7617).",
			Example: "admin area", set: setBasicRealm, get: inBasicAuth(func(b *BasicAuth) any { return b.Realm })},
		{Label: "basicAuth.removeHeader", JSON: "config.basic_auth.remove_header", Kind: KindBool, Default: "false", Code: diagnostics.BadBasicAuth,
			Doc:     "Removes the `Authorization` header before the request goes to the backend.",
			Example: "true", set: setBasicRemoveHeader, get: inBasicAuth(func(b *BasicAuth) any { return b.RemoveHeader })},
		// Forward auth.
		{Label: "forwardAuth.address", JSON: "config.forward_auth.address", Kind: KindString, Default: "(required)", Code: diagnostics.BadForwardAuth,
			Doc:     "URL of the auth service, asked with the request's method, path (`X-Forwarded-Uri`) and headers before each request: a 2xx lets the request through, any other answer goes back to the client. An unreachable or slow auth service refuses the request (503 `auth-unavailable`); it never counts against the route's backends.",
			Example: "http://auth:9000/verify", set: setForwardAddress, get: inForwardAuth(func(f *ForwardAuth) any { return f.Address })},
		{Label: "forwardAuth.trustForwardHeader", JSON: "config.forward_auth.trust_forward_header", Kind: KindBool, Default: "false", Code: diagnostics.BadForwardAuth,
			Doc:     "Passes the X-Forwarded-* headers the request came with to the auth service (only a --trusted-proxies peer's: another client's are removed first); otherwise Levee sets them (from the --trusted-proxies rule).",
			Example: "true", set: setForwardTrust, get: inForwardAuth(func(f *ForwardAuth) any { return f.TrustForwardHeader })},
		{Label: "forwardAuth.authResponseHeaders", JSON: "config.forward_auth.auth_response_headers", Kind: KindList, Default: "(none)", Code: diagnostics.BadForwardAuth,
			Doc:     "Headers of the auth service's 2xx answer copied onto the request sent to the backend (replacing any the client sent, and removing them when the answer lacks them; their other spellings, `X_Auth_User` or `X.Auth.User`, are always removed).",
			Example: "X-Auth-User,X-Auth-Groups", set: setForwardHeaders(func(f *ForwardAuth) *[]string { return &f.AuthResponseHeaders }), get: inForwardAuth(func(f *ForwardAuth) any { return nonNil(f.AuthResponseHeaders) })},
		{Label: "forwardAuth.authRequestHeaders", JSON: "config.forward_auth.auth_request_headers", Kind: KindList, Default: "(all)", Code: diagnostics.BadForwardAuth,
			Doc:     "When set, the only client headers sent to the auth service; each may come once (`Cookie` excepted: a second one is 400 `bad-header`), and their other spellings (`X_Api_Key`) never reach the backend.",
			Example: "Cookie,Authorization", set: setForwardHeaders(func(f *ForwardAuth) *[]string { return &f.AuthRequestHeaders }), get: omitEmpty(inForwardAuth(func(f *ForwardAuth) any { return f.AuthRequestHeaders }))},
		{Label: "forwardAuth.timeout", JSON: "config.forward_auth.timeout", Kind: KindDuration, Default: DefaultForwardAuthTimeout.String(), Code: diagnostics.BadForwardAuth,
			Doc:     "How long Levee waits for the auth service's answer; past it the request is refused (503 `auth-unavailable`).",
			Example: "2s", set: setForwardTimeout, get: inForwardAuth(func(f *ForwardAuth) any { return f.Timeout })},
		// IP allow-list.
		{Label: "ipAllowList.sourceRange", JSON: "config.ip_allow_list.source_range", Kind: KindList, Default: "(none: deny all)", Code: diagnostics.BadIPAllowList,
			Doc:     "CIDR prefixes or addresses allowed, comma-separated; other clients get 403 (`forbidden-ip`). The client address is the peer's, or from X-Forwarded-For when the peer is one of --trusted-proxies. A bad entry makes the route deny everyone (W052).",
			Example: "10.0.0.0/8,192.0.2.7", set: setAllowRange, get: inIPAllowList(func(l *IPAllowList) any { return nonNil(l.SourceRange) })},
		{Label: "ipAllowList.depth", JSON: "config.ip_allow_list.depth", Kind: KindInt, Default: "0", Code: diagnostics.BadIPAllowList,
			Doc:     "With a value n > 0, the client address is the n-th X-Forwarded-For entry from the right (Traefik's ipStrategy.depth), used only when the peer is a trusted proxy; 0 applies the --trusted-proxies rule.",
			Example: "1", set: setAllowDepth, get: omitEmpty(inIPAllowList(func(l *IPAllowList) any { return l.Depth }))},
		// Rate limit.
		{Label: "rateLimit.average", JSON: "config.rate_limit.average", Kind: KindInt, Default: "(required)", Code: diagnostics.BadRateLimit,
			Doc:     "Requests allowed per period on average, per source (a token bucket); more get 429 (`rate-limited`) with `Retry-After` and the IETF `RateLimit` and `RateLimit-Policy` headers.",
			Example: "100", set: setRateAverage, get: inRateLimit(func(r *RateLimit) any { return r.Average })},
		{Label: "rateLimit.period", JSON: "config.rate_limit.period", Kind: KindDuration, Default: DefaultRatePeriod.String(), Code: diagnostics.BadRateLimit,
			Doc:     "The period of `average` (whole seconds or a Go duration).",
			Example: "1m", set: setRatePeriod, get: inRateLimit(func(r *RateLimit) any { return r.Period })},
		{Label: "rateLimit.burst", JSON: "config.rate_limit.burst", Kind: KindInt, Default: strconv.Itoa(DefaultRateBurst), Code: diagnostics.BadRateLimit,
			Doc:     "Requests a source may send at once above the average (the bucket's size).",
			Example: "50", set: setRateBurst, get: inRateLimit(func(r *RateLimit) any { return r.Burst })},
		{Label: "rateLimit.sourceCriterion", JSON: "config.rate_limit.source_criterion", Kind: KindString, Default: CriterionIP, Code: diagnostics.BadRateLimit,
			Doc:     "What a bucket is kept per: `ip` (client address, --trusted-proxies rule), `host` (the request's Host as routing reads it: lower case, without port, trailing dot or brackets, so `H.TEST.:80` counts as `h.test`) or `header:<name>` (a header's value; requests without it share one bucket).",
			Example: "header:X-Api-Key", set: setCriterion(func(a *AccessPolicies) *string { return &rateLimitOf(a).SourceCriterion }), get: inRateLimit(func(r *RateLimit) any { return r.SourceCriterion })},
		// In-flight limit.
		{Label: "inFlight.amount", JSON: "config.in_flight.amount", Kind: KindInt, Default: "(required)", Code: diagnostics.BadInFlight,
			Doc:     "Requests under way at once per source; more get 429 (`too-many-in-flight`) with `Retry-After: 1`: the client sent too many at once, the backend is not at fault.",
			Example: "10", set: setInFlightAmount, get: inInFlight(func(f *InFlight) any { return f.Amount })},
		{Label: "inFlight.sourceCriterion", JSON: "config.in_flight.source_criterion", Kind: KindString, Default: CriterionIP, Code: diagnostics.BadInFlight,
			Doc:     "What requests are counted per: `ip`, `host` or `header:<name>`, as for rateLimit.",
			Example: "host", set: setCriterion(func(a *AccessPolicies) *string { return &inFlightOf(a).SourceCriterion }), get: inInFlight(func(f *InFlight) any { return f.SourceCriterion })},
	}
}

// The access policies' groups in the payload (see group).
var (
	inBasicAuth   = group(func(ep *Entrypoint) *BasicAuth { return ep.Access.BasicAuth })
	inForwardAuth = group(func(ep *Entrypoint) *ForwardAuth { return ep.Access.ForwardAuth })
	inIPAllowList = group(func(ep *Entrypoint) *IPAllowList { return ep.Access.IPAllowList })
	inRateLimit   = group(func(ep *Entrypoint) *RateLimit { return ep.Access.RateLimit })
	inInFlight    = group(func(ep *Entrypoint) *InFlight { return ep.Access.InFlight })
)

// enableAccessGroup turns on the policy a group configures (a payload
// that gives the group at all, even as a bad value).
func enableAccessGroup(d *draft, path string) {
	a := &d.ep.Access
	switch path {
	case "config.basic_auth":
		basicAuthOf(a)
	case "config.forward_auth":
		forwardAuthOf(a)
	case "config.ip_allow_list":
		ipAllowListOf(a)
	case "config.rate_limit":
		rateLimitOf(a)
	case "config.in_flight":
		inFlightOf(a)
	}
}

// The ...Of helpers return a policy, turning it on with its defaults.

func basicAuthOf(a *AccessPolicies) *BasicAuth {
	if a.BasicAuth == nil {
		a.BasicAuth = &BasicAuth{Realm: DefaultRealm}
	}
	return a.BasicAuth
}

func forwardAuthOf(a *AccessPolicies) *ForwardAuth {
	if a.ForwardAuth == nil {
		a.ForwardAuth = &ForwardAuth{Timeout: DefaultForwardAuthTimeout}
	}
	return a.ForwardAuth
}

func ipAllowListOf(a *AccessPolicies) *IPAllowList {
	if a.IPAllowList == nil {
		a.IPAllowList = &IPAllowList{}
	}
	return a.IPAllowList
}

func rateLimitOf(a *AccessPolicies) *RateLimit {
	if a.RateLimit == nil {
		a.RateLimit = &RateLimit{Period: DefaultRatePeriod, Burst: DefaultRateBurst, SourceCriterion: CriterionIP}
	}
	return a.RateLimit
}

func inFlightOf(a *AccessPolicies) *InFlight {
	if a.InFlight == nil {
		a.InFlight = &InFlight{SourceCriterion: CriterionIP}
	}
	return a.InFlight
}

func setBasicUsers(d *draft, f *Field, key string, v any) {
	ba := basicAuthOf(&d.ep.Access)
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		ba.Users = []string{"(invalid)"} // keeps the route denying
		return
	}
	// A bad line stays in the list: the route denies until it is fixed.
	var names []string
	var hashes []Hash
	for _, line := range items {
		name, h, err := CheckHtpasswdLine(line)
		switch {
		case err != nil:
			d.add(f.Code, key, redactLine(line), "route denies every request",
				"invalid basicAuth.users: "+err.Error(), "use bcrypt hashes (htpasswd -nbB name password); in compose write each $ as $$")
			continue
		case h.Kind.Weak():
			d.add(diagnostics.WeakBasicHash, key, redactLine(line), WeakHashFallback,
				WeakHashMessage(name, h), WeakHashHint)
		}
		names, hashes = append(names, name), append(hashes, h)
	}
	if m := MixedCosts(names, hashes); m != "" {
		d.add(diagnostics.MixedHashCosts, key, "", MixedCostsFallback,
			MixedCostsMessage(m), MixedCostsHint)
	}
	ba.Users = items
}

// The texts of W055 and W056, shared with the router (which reports them
// for a users file).
const (
	WeakHashFallback   = "the weak hash: the user can log in"
	WeakHashHint       = "create a bcrypt hash: htpasswd -nbB name password (in compose write each $ as $$)"
	MixedCostsFallback = "the costliest check on every failure"
	MixedCostsHint     = "re-hash every user with one bcrypt cost: htpasswd -nbB -C 10 name password"
)

// WeakHashMessage is W055's message for user's hash h.
func WeakHashMessage(user string, h Hash) string {
	return fmt.Sprintf("user %q has a weak %s hash: accepted for migration, cheap to brute force if it leaks", user, h.Kind)
}

// MixedCostsMessage is W056's message for MixedCosts' description m.
func MixedCostsMessage(m string) string {
	return "basicAuth users' hashes differ in cost (" + m + "): every failed check costs the most expensive one, so that timing does not tell names apart"
}

// redactLine keeps the user name and the kind of hash of an htpasswd line
// for a diagnostic, not the hash itself.
func redactLine(line string) string {
	user, hash, ok := strings.Cut(line, ":")
	if !ok {
		return "(not name:hash)"
	}
	return user + ":" + hash[:min(len(hash), 4)] + "…"
}

func setBasicUsersFile(d *draft, f *Field, key string, v any) {
	if s, ok := decode(d, f, key, v, toString, nil); ok {
		basicAuthOf(&d.ep.Access).UsersFile = strings.TrimSpace(s)
	} else {
		basicAuthOf(&d.ep.Access).UsersFile = "(invalid)" // unreadable: denies
	}
}

func setBasicRealm(d *draft, f *Field, key string, v any) {
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if strings.ContainsAny(s, "\"\\\r\n") {
			return fmt.Errorf("must not contain quotes, backslashes or line breaks")
		}
		return nil
	})
	if ok && s != "" {
		basicAuthOf(&d.ep.Access).Realm = s
	} else {
		basicAuthOf(&d.ep.Access)
	}
}

func setBasicRemoveHeader(d *draft, f *Field, key string, v any) {
	b, _ := decode(d, f, key, v, toBool, nil)
	basicAuthOf(&d.ep.Access).RemoveHeader = b
}

// CheckForwardAddress checks forwardAuth.address: an absolute http or
// https URL with a host.
func CheckForwardAddress(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("address %q: %w", s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("address %q: want an absolute http:// or https:// URL", s)
	}
	return nil
}

func setForwardAddress(d *draft, f *Field, key string, v any) {
	fa := forwardAuthOf(&d.ep.Access)
	s, err := toString(v)
	if err == nil {
		s = strings.TrimSpace(s)
		err = CheckForwardAddress(s)
	}
	if err != nil {
		d.add(f.Code, key, displayValue(v), "route denies every request", "invalid forwardAuth.address: "+err.Error(), "")
	}
	fa.Address = s // kept as written: the router denies while it is bad
}

func setForwardTrust(d *draft, f *Field, key string, v any) {
	b, _ := decode(d, f, key, v, toBool, nil)
	forwardAuthOf(&d.ep.Access).TrustForwardHeader = b
}

func setForwardHeaders(ptr func(*ForwardAuth) *[]string) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		fa := forwardAuthOf(&d.ep.Access)
		items, err := toList(v)
		if err != nil {
			d.bad(f, key, v, err.Error())
			return
		}
		*ptr(fa) = normalizeList(items, func(h string) (string, bool) {
			return canonicalHeader(h), validHeaderName(h)
		}, func(h string) {
			d.add(f.Code, key, h, "", fmt.Sprintf("invalid header name %q dropped", h), "")
		})
	}
}

// canonicalHeader is the canonical form of a header name
// (textproto.CanonicalMIMEHeaderKey's, without linking net/textproto).
func canonicalHeader(s string) string {
	b := []byte(strings.ToLower(s))
	upper := true
	for i, c := range b {
		if upper && 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
		upper = c == '-'
	}
	return string(b)
}

func setForwardTimeout(d *draft, f *Field, key string, v any) {
	fa := forwardAuthOf(&d.ep.Access)
	if t, ok := decode(d, f, key, v, toDuration, positive); ok {
		fa.Timeout = t
	}
}

func setAllowRange(d *draft, f *Field, key string, v any) {
	al := ipAllowListOf(&d.ep.Access)
	items, err := toList(v)
	if err != nil {
		d.add(f.Code, key, displayValue(v), "route denies every request", "invalid ipAllowList.sourceRange: "+err.Error(), "")
		al.SourceRange = []string{"(invalid)"} // keeps the route denying
		return
	}
	for _, it := range items {
		if _, err := ParseSourceRange(it); err != nil {
			d.add(f.Code, key, it, "route denies every request", "invalid ipAllowList.sourceRange: "+err.Error(),
				"write CIDR prefixes (10.0.0.0/8) or addresses (192.0.2.7)")
		}
	}
	al.SourceRange = items // kept as written: the router denies while one is bad
}

func setAllowDepth(d *draft, f *Field, key string, v any) {
	al := ipAllowListOf(&d.ep.Access)
	if n, ok := decode(d, f, key, v, toInt, between(0, 64, "0-64")); ok {
		al.Depth = n
	}
}

func setRateAverage(d *draft, f *Field, key string, v any) {
	rl := rateLimitOf(&d.ep.Access)
	if n, ok := decode(d, f, key, v, toInt, between(1, MaxRateAverage, fmt.Sprintf("1-%d", MaxRateAverage))); ok {
		rl.Average = n
	}
}

func setRatePeriod(d *draft, f *Field, key string, v any) {
	rl := rateLimitOf(&d.ep.Access)
	if t, ok := decode(d, f, key, v, toDuration, positive); ok {
		rl.Period = t
	}
}

func setRateBurst(d *draft, f *Field, key string, v any) {
	rl := rateLimitOf(&d.ep.Access)
	if n, ok := decode(d, f, key, v, toInt, between(1, MaxRateAverage, fmt.Sprintf("1-%d", MaxRateAverage))); ok {
		rl.Burst = n
	}
}

func setInFlightAmount(d *draft, f *Field, key string, v any) {
	fl := inFlightOf(&d.ep.Access)
	if n, ok := decode(d, f, key, v, toInt, between(1, MaxInFlight, fmt.Sprintf("1-%d", MaxInFlight))); ok {
		fl.Amount = n
	}
}

func setCriterion(ptr func(*AccessPolicies) *string) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		p := ptr(&d.ep.Access)
		if c, ok := decode(d, f, key, v, toString, nil); ok {
			crit, err := ParseCriterion(c)
			if err != nil {
				d.bad(f, key, v, err.Error())
				return
			}
			*p = crit
		}
	}
}
