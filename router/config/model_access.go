package config

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// AccessPolicies are a route's policies that admit or refuse a request.
// A nil policy is off. Each keeps what the operator wrote even where it
// is invalid (a bad CIDR, a non-bcrypt hash, a bad auth address): the
// validator reports it, and the router compiles the policy to deny every
// request rather than drop the bad part and let requests through, so the
// same entrypoint denies again after it was persisted and read back.
type AccessPolicies struct {
	BasicAuth   *BasicAuth   `json:"basic_auth,omitempty"`
	ForwardAuth *ForwardAuth `json:"forward_auth,omitempty"`
	IPAllowList *IPAllowList `json:"ip_allow_list,omitempty"`
	RateLimit   *RateLimit   `json:"rate_limit,omitempty"`
	InFlight    *InFlight    `json:"in_flight,omitempty"`
	// Unread are the keys, as written, that named an access policy but
	// that Levee could not read (an unknown field under basicAuth, a
	// misspelled policy name such as basicAuh). While any is set the
	// route denies every request: a policy Levee cannot read is never
	// dropped, so the route is never served without it.
	Unread []string `json:"unread,omitempty"`
}

// IsZero reports whether no access policy is on.
func (a AccessPolicies) IsZero() bool {
	return a.BasicAuth == nil && a.ForwardAuth == nil && a.IPAllowList == nil && a.RateLimit == nil && a.InFlight == nil && len(a.Unread) == 0
}

// Equal compares two sets of access policies field by field.
func (a AccessPolicies) Equal(b AccessPolicies) bool {
	return eqPtr(a.BasicAuth, b.BasicAuth, func(x, y *BasicAuth) bool {
		return x.UsersFile == y.UsersFile && x.Realm == y.Realm && x.RemoveHeader == y.RemoveHeader && equalStrings(x.Users, y.Users)
	}) && eqPtr(a.ForwardAuth, b.ForwardAuth, func(x, y *ForwardAuth) bool {
		return x.Address == y.Address && x.TrustForwardHeader == y.TrustForwardHeader && x.Timeout == y.Timeout &&
			equalStrings(x.AuthResponseHeaders, y.AuthResponseHeaders) && equalStrings(x.AuthRequestHeaders, y.AuthRequestHeaders)
	}) && eqPtr(a.IPAllowList, b.IPAllowList, func(x, y *IPAllowList) bool {
		return x.Depth == y.Depth && equalStrings(x.SourceRange, y.SourceRange)
	}) && eqPtr(a.RateLimit, b.RateLimit, func(x, y *RateLimit) bool { return *x == *y }) &&
		eqPtr(a.InFlight, b.InFlight, func(x, y *InFlight) bool { return *x == *y }) &&
		equalStrings(a.Unread, b.Unread)
}

func eqPtr[T any](a, b *T, eq func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return eq(a, b)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Defaults of the access policies.
const (
	DefaultRealm              = "levee"
	DefaultForwardAuthTimeout = 5 * time.Second
	DefaultRatePeriod         = time.Second
	DefaultRateBurst          = 1
	// CriterionIP keys a limit by client address (the --trusted-proxies
	// rule), CriterionHost by the request's Host in routing's form
	// (AppendRequestHost), and "header:<name>" by a request header's
	// value.
	CriterionIP     = "ip"
	CriterionHost   = "host"
	CriterionHeader = "header:"
	// MaxRateAverage and MaxInFlight bound the limits' counts.
	MaxRateAverage = 1_000_000_000
	MaxInFlight    = 1_000_000
)

// BasicAuth is HTTP Basic authentication (RFC 7617) against htpasswd
// lines (see CheckHtpasswdLine for the hashes accepted).
type BasicAuth struct {
	// Users are "name:hash" lines; compose files escape each '$' of a
	// hash as "$$".
	Users []string `json:"users,omitempty"`
	// UsersFile is a file of more such lines, read when the route is
	// compiled.
	UsersFile    string `json:"users_file,omitempty"`
	Realm        string `json:"realm"`
	RemoveHeader bool   `json:"remove_header"`
}

// ForwardAuth asks an auth service about each request.
type ForwardAuth struct {
	// Address is the auth service's URL (http or https).
	Address            string `json:"address"`
	TrustForwardHeader bool   `json:"trust_forward_header"`
	// AuthResponseHeaders are copied from the auth service's 2xx answer to
	// the request sent on to the backend.
	AuthResponseHeaders []string `json:"auth_response_headers,omitempty"`
	// AuthRequestHeaders, when set, are the only client headers sent to
	// the auth service.
	AuthRequestHeaders []string      `json:"auth_request_headers,omitempty"`
	Timeout            time.Duration `json:"timeout"`
}

// IPAllowList admits only clients whose address is in SourceRange.
type IPAllowList struct {
	// SourceRange are CIDR prefixes or single addresses.
	SourceRange []string `json:"source_range"`
	// Depth, when > 0, takes the client address as the depth-th
	// X-Forwarded-For entry from the right (from trusted proxies only).
	Depth int `json:"depth,omitempty"`
}

// RateLimit is a token bucket per source: Average requests per Period on
// average, bursts of up to Burst.
type RateLimit struct {
	Average         int           `json:"average"`
	Period          time.Duration `json:"period"`
	Burst           int           `json:"burst"`
	SourceCriterion string        `json:"source_criterion"`
	// Scope is ScopeLocal (each replica limits alone, the default) or
	// ScopeFleet (the replicas sharing a breaker store limit together).
	Scope string `json:"scope,omitempty"`
}

// InFlight limits the requests under way at once per source.
type InFlight struct {
	Amount          int    `json:"amount"`
	SourceCriterion string `json:"source_criterion"`
	// Scope is ScopeLocal (each replica limits alone, the default) or
	// ScopeFleet (the replicas sharing a breaker store limit together).
	Scope string `json:"scope,omitempty"`
}

// ParseSourceRange parses one allow-list item: a CIDR prefix or a single
// address (a /32 or /128).
func ParseSourceRange(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("source range %q: %w", s, err)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("source range %q: want a CIDR prefix or an IP address", s)
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// ParseCriterion checks a sourceCriterion: ip, host or header:<name>.
func ParseCriterion(s string) (string, error) {
	t := strings.TrimSpace(s)
	switch lower := strings.ToLower(t); {
	case lower == CriterionIP, lower == "client-ip", lower == "clientip":
		return CriterionIP, nil
	case lower == CriterionHost, lower == "requesthost":
		return CriterionHost, nil
	case strings.HasPrefix(lower, CriterionHeader):
		name := strings.TrimSpace(t[len(CriterionHeader):])
		if name == "" || !validHeaderName(name) {
			return "", fmt.Errorf("header:<name> needs a header name")
		}
		return CriterionHeader + name, nil
	}
	return "", fmt.Errorf("want ip, host or header:<name>")
}

// validHeaderName reports whether s is an HTTP field name (a token, RFC
// 9110 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
