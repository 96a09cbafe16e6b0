package policy

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// Env is what the router gives every policy it compiles: how to count a
// refusal, what time it is, and which peers are trusted proxies.
type Env struct {
	// Route is the route id the policy is compiled for.
	Route string
	// Rec counts refusals (nil: not counted).
	Rec Recorder
	// Now tells the time (nil: time.Now). Rate limits read it.
	Now func() time.Time
	// TrustedProxies are levee serve's --trusted-proxies: peers whose
	// X-Forwarded-For is believed (the same rule the proxy applies when
	// it forwards the header).
	TrustedProxies []netip.Prefix
}

// Refuser returns the Refuser of policy name on the env's route.
func (e Env) Refuser(name string) Refuser { return Refuser{Route: e.Route, Policy: name, Rec: e.Rec} }

// Clock returns e.Now, or time.Now when it is nil.
func (e Env) Clock() func() time.Time {
	if e.Now == nil {
		return time.Now
	}
	return e.Now
}

// PeerTrusted reports whether r came straight from a trusted proxy, whose
// X-Forwarded-* headers may then be believed (redirectScheme reads
// X-Forwarded-Proto by this rule).
func (e Env) PeerTrusted(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	return err == nil && isTrusted(peer.Unmap().WithZone(""), e.TrustedProxies)
}

// ClientIP returns the address of the client that sent r, by the rule the
// proxy applies to X-Forwarded-For: a peer that is not a trusted proxy is
// the client, whatever it claims in the header. A trusted peer's
// X-Forwarded-For is walked from the right (the entries the trusted
// proxies appended) to the first address that is not itself a trusted
// proxy; with depth > 0 the depth-th entry from the right is taken
// instead (Traefik's ipStrategy.depth), still only from a trusted peer.
// An address that cannot be parsed gives ok = false: the caller refuses
// rather than guess.
func ClientIP(r *http.Request, trusted []netip.Prefix, depth int) (addr netip.Addr, ok bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, false
	}
	peer = peer.Unmap().WithZone("")
	if !isTrusted(peer, trusted) {
		return peer, true
	}
	xff := forwardedFor(r.Header.Values("X-Forwarded-For"))
	if len(xff) == 0 {
		return peer, true
	}
	if depth > 0 {
		if depth > len(xff) {
			return netip.Addr{}, false
		}
		return parseEntry(xff[len(xff)-depth])
	}
	for i := len(xff) - 1; i >= 0; i-- {
		a, ok := parseEntry(xff[i])
		if !ok {
			return netip.Addr{}, false
		}
		if !isTrusted(a, trusted) || i == 0 {
			return a, true
		}
	}
	return peer, true
}

func parseEntry(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil {
		// "[::1]:80" or "192.0.2.1:80": some proxies append ports.
		ap, perr := netip.ParseAddrPort(strings.TrimSpace(s))
		if perr != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}

// forwardedFor splits X-Forwarded-For field lines into entries, in order.
func forwardedFor(lines []string) []string {
	var out []string
	for _, l := range lines {
		for _, e := range strings.Split(l, ",") {
			if e = strings.TrimSpace(e); e != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
