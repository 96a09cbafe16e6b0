package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// udpFields are the rows only UDP routes have (labels
// <prefix>.udp.<service>.<field>, the field written without "udp.":
// levee.udp.dns.listener). A UDP route reads these, port and weight
// (udpShared); any other field is W093 and ignored.
func udpFields() []Field {
	return []Field{
		{Label: "udp.listener", JSON: "config.udp.listener", Kind: KindString, Default: "(required)", Code: diagnostics.BadUDP,
			Doc:     "UDP routes only: the UDP listener the route serves on (`--listen dns=:5353,udp`). Without a valid one the route is not routed (E009). See [tcp.md](tcp.md#udp-routes).",
			Example: "dns", set: setUDPListener, get: onUDP(func(u *UDP) any { return u.Listener })},
		{Label: "udp.idleTimeout", JSON: "config.udp.idle_timeout", Kind: KindDuration, Default: DefaultUDPIdleTimeout.String(), Code: diagnostics.BadUDP,
			Doc:     "UDP routes only: a client's session (its backend, its socket toward it) ends after no datagram moved either way for this long; the client's next datagram starts a new session, on the next backend in turn.",
			Example: "2m", set: setUDPIdleTimeout, get: onUDP(func(u *UDP) any { return u.IdleTimeout })},
		{Label: "udp.maxSessions", JSON: "config.udp.max_sessions", Kind: KindInt, Default: strconv.Itoa(DefaultUDPMaxSessions), Code: diagnostics.BadUDPMaxSessions,
			Doc:     fmt.Sprintf("UDP routes only: the most sessions (client addresses) the route's listener holds at once (1-%d). A new client beyond it takes the place of the least recently active session, which ends (counted in `levee_udp_sessions_evicted_total`); a bad value is W097 and the default applies.", MaxUDPMaxSessions),
			Example: "50000", set: setUDPMaxSessions, get: onUDP(func(u *UDP) any { return u.MaxSessions })},
		{Label: "udp.circuitBreaker.answerTimeout", JSON: "config.udp.answer_timeout", Kind: KindDuration, Default: "0s (off)", Code: diagnostics.BadUDPAnswerTimeout,
			Doc:     "UDP routes only: a session whose backend sends nothing back within this long after a client's datagram is a failure of the route's breaker (for request/response protocols such as DNS), and ends. Off by default: then only an ICMP port unreachable is a failure. Like any circuitBreaker.* field it turns the breaker on; a bad value is W099 and the breaker does not wait for answers. Label `levee.udp.<service>.circuitBreaker.answerTimeout`.",
			Example: "2s", set: setUDPAnswerTimeout, get: onUDPIf(func(u *UDP) any { return u.AnswerTimeout }, func(u *UDP) bool { return u.AnswerTimeout > 0 })},
	}
}

// udpShared are the rows of the HTTP table a UDP route reads too: where
// its backends are, and the breaker's connect-level rules (an outcome is
// a session's first answer, an ICMP port unreachable or, with
// udp.circuitBreaker.answerTimeout, a silence).
var udpShared = map[string]bool{
	"port": true, "weight": true,
	"circuitBreaker.enabled": true, "circuitBreaker.threshold": true, "circuitBreaker.minRequests": true,
	"circuitBreaker.window": true, "circuitBreaker.consecutiveFailures": true, "circuitBreaker.cooldown": true,
	"circuitBreaker.maxCooldown": true, "circuitBreaker.halfOpenProbes": true, "circuitBreaker.successesToClose": true,
	"circuitBreaker.probeTimeout": true, "circuitBreaker.cooldownJitter": true, "circuitBreaker.mode": true,
}

// isUDPRow reports a row of udpFields.
func isUDPRow(f *Field) bool { return strings.HasPrefix(f.Label, "udp.") }

// onUDP reads a UDP field for the payload of a UDP route.
func onUDP(read func(u *UDP) any) getter {
	return onUDPIf(read, func(*UDP) bool { return true })
}

// onUDPIf is onUDP for a field written only when keep says so.
func onUDPIf(read func(u *UDP) any, keep func(u *UDP) bool) getter {
	return func(ep *Entrypoint, _ *Backend) (any, bool) {
		if ep.Protocol != ProtocolUDP || !keep(&ep.UDP) {
			return nil, false
		}
		return read(&ep.UDP), true
	}
}

func setUDPListener(d *draft, f *Field, key string, v any) {
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if !ValidListenerName(s) {
			return fmt.Errorf("want a listener name of lower-case letters, digits, '-' and '_'")
		}
		return nil
	})
	if ok {
		d.ep.UDP.Listener = s
	}
}

func setUDPIdleTimeout(d *draft, f *Field, key string, v any) {
	t, ok := decode(d, f, key, v, toDuration, func(t time.Duration) error {
		if t <= 0 {
			return fmt.Errorf("must be positive")
		}
		return nil
	})
	if ok {
		d.ep.UDP.IdleTimeout = t
	}
}

func setUDPMaxSessions(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toInt, between(1, MaxUDPMaxSessions, fmt.Sprintf("1-%d", MaxUDPMaxSessions))); ok {
		d.ep.UDP.MaxSessions = n
	}
}

// setUDPAnswerTimeout decodes the breaker's answer wait; like every
// circuitBreaker.* field, writing it turns the breaker on.
func setUDPAnswerTimeout(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	t, ok := decode(d, f, key, v, toDuration, func(t time.Duration) error {
		if t <= 0 {
			return fmt.Errorf("must be a positive duration")
		}
		return nil
	})
	if ok {
		d.ep.UDP.AnswerTimeout = t
	}
}

// asUDP makes the draft a UDP route's: its UDP fields at their defaults.
func (d *draft) asUDP() {
	d.ep.Protocol = ProtocolUDP
	d.ep.UDP = UDP{IdleTimeout: DefaultUDPIdleTimeout, MaxSessions: DefaultUDPMaxSessions}
}

// finishUDP is finish for a UDP route: it needs a listener (E009), and
// its breaker is validated as a TCP route's.
func (d *draft) finishUDP() (Entrypoint, bool) {
	d.finishBreaker()
	routable := true
	if d.ep.UDP.Listener == "" {
		d.add(diagnostics.UDPNoListener, d.keyOf(fieldByLabel("udp.listener")), "", "",
			"no valid listener: the UDP route is not routed", "name a listener declared with --listen name=addr,udp")
		routable = false
	}
	diagnostics.Sort(d.diags)
	return d.ep, routable
}

// DecodeUDPLabels decodes one UDP service's label fields (the part after
// <prefix>.udp.<service>.), as DecodeTCPLabels does a TCP service's.
func DecodeUDPLabels(fields map[string]string, src diagnostics.Source, key func(field string) string) (LabelConfig, []diagnostics.Diagnostic) {
	named := make(map[string]string, len(fields))
	written := make(map[string]string, len(fields))
	for name, value := range fields {
		canon := name
		if _, _, ok := lookupLabel("udp." + name); ok {
			canon = "udp." + name
		}
		named[canon] = value
		written[canon] = name
	}
	return decodeLabels(named, src, func(field string) string {
		if w, ok := written[field]; ok {
			return key(w)
		}
		return key(strings.TrimPrefix(field, "udp."))
	}, (*draft).asUDP)
}
