package config

import (
	"fmt"
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
	}
}

// udpShared are the rows of the HTTP table a UDP route reads too.
var udpShared = map[string]bool{"port": true, "weight": true}

// isUDPRow reports a row of udpFields.
func isUDPRow(f *Field) bool { return strings.HasPrefix(f.Label, "udp.") }

// onUDP reads a UDP field for the payload of a UDP route.
func onUDP(read func(u *UDP) any) getter {
	return func(ep *Entrypoint, _ *Backend) (any, bool) {
		if ep.Protocol != ProtocolUDP {
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

// asUDP makes the draft a UDP route's: its UDP fields at their defaults.
func (d *draft) asUDP() {
	d.ep.Protocol = ProtocolUDP
	d.ep.UDP = UDP{IdleTimeout: DefaultUDPIdleTimeout}
}

// finishUDP is finish for a UDP route: it needs a listener (E009).
func (d *draft) finishUDP() (Entrypoint, bool) {
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
