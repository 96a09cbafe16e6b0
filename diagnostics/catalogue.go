package diagnostics

import (
	"slices"
	"sort"
)

// Entry describes one code in the catalogue.
type Entry struct {
	Code     Code     `json:"code"`
	Severity Severity `json:"severity"`
	// Title is a short name for the problem.
	Title string `json:"title"`
	// Effect says what Levee does about it (which fallback applies).
	Effect string `json:"effect"`
	// Fix says how to correct the configuration.
	Fix string `json:"fix"`
	// Example is a configuration snippet that triggers the code.
	Example string `json:"example"`
}

// Codes used across Levee. Numbers follow Sōzune's where the concept is the
// same; new codes start at W028 and never change meaning once published.
const (
	MissingHost       Code = "E002"
	NoService         Code = "E004"
	BadPort           Code = "W001"
	BadPriority       Code = "W002"
	BadTimeout        Code = "W003"
	NetworkNotFound   Code = "W009"
	NoAddress         Code = "W010"
	UnknownProtocol   Code = "W012"
	UnknownKey        Code = "W013"
	BadMethod         Code = "W014"
	BadBodyLimit      Code = "W015"
	BadBodyBuffer     Code = "W016"
	RouteCollision    Code = "W018"
	BadHealthCheck    Code = "W021"
	BadLoadBalancer   Code = "W022"
	BadRetry          Code = "W023"
	BadCircuitBreaker Code = "W024"
	BadWeight         Code = "W027"
	BadBool           Code = "W028"
	BadPath           Code = "W029"
	BadPathRegex      Code = "W030"
	ReplicasDisagree  Code = "W031"
	BadHost           Code = "W032"
	BadRewrite        Code = "W033"
	NoBackends        Code = "W034"
	DuplicateKey      Code = "W035"
	BadPassiveHealth  Code = "W036"
	PathDefaulted     Code = "I001"
	PortDefaulted     Code = "I002"
	TraefikLabels     Code = "I003"
	// HealthTimeoutAdjusted is a value Levee changed to make it work, not
	// a mistake it rejected: the route runs with the value shown.
	HealthTimeoutAdjusted Code = "I004"
)

// catalogue is filled in catalogue_entries.go and, for each feature with
// codes of its own, in catalogue_<feature>.go. Each feature has its own
// range of numbers (in every severity) so that codes never collide:
// 040-049 TLS and certificates, 050-069 traffic policies, 070-074 Swarm,
// 075-079 the shared breaker store, 080-084 breaker fallbacks, 085-089
// scale (bulk writes, provider filtering, draining), 090-094 discovery;
// the file provider has 026, 037 and 038.
var catalogue = slices.Concat(entries(), backendTLSEntries(), tlsEntries(), policyEntries(), transformPolicyEntries(), swarmEntries(), storeEntries(), fallbackEntries(), errorPagesEntries(), scaleEntries(), discoveryEntries(), fileEntries(), namedPolicyEntries(), dockerHostsEntries(), grpcEntries(), tcpEntries(), proxyProtocolEntries(), earlyDataEntries(), udpEntries(), fleetRateLimitEntries(), kubernetesEntries())

// Lookup returns the catalogue entry for code.
func Lookup(code Code) (Entry, bool) {
	for _, e := range catalogue {
		if e.Code == code {
			return e, true
		}
	}
	return Entry{}, false
}

// Catalogue returns every entry, sorted by code (errors, infos, warnings by
// number). The returned slice is a copy.
func Catalogue() []Entry {
	out := append([]Entry(nil), catalogue...)
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}
