package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// tcpFields are the rows only TCP routes have (labels
// <prefix>.tcp.<service>.<field>, where the field is written without its
// "tcp." prefix: levee.tcp.pg.listener). A TCP route reads these, port,
// weight and the connect-level circuitBreaker.* rows (tcpShared); any
// other field is W093 and ignored, and these rows on an HTTP route are
// W093 too.
func tcpFields() []Field {
	return []Field{
		{Label: "tcp.listener", JSON: "config.tcp.listener", Kind: KindString, Default: "(required)", Code: diagnostics.BadTCP,
			Doc:     "TCP routes only: the listener the route serves on, a plain TCP listener (`--listen postgres=:5432,tcp`), or, with `tcp.sni`, a TLS listener (`--listen websecure=:443,tls`) where HTTP routes keep working beside it. Without a valid one the route is not routed (E008). See [tcp.md](tcp.md).",
			Example: "postgres", set: setTCPListener, get: onTCP(func(t *TCP) any { return t.Listener })},
		{Label: "tcp.sni", JSON: "config.tcp.sni", Kind: KindList, Default: "(none: every connection of the listener)", Code: diagnostics.BadTCP,
			Doc:     "TCP routes only: on a TLS listener, the server names (SNI, RFC 6066 3) whose connections the route takes, read from the ClientHello before any HTTP, comma-separated; `*.example.com` matches one label below example.com, `*` any name. Connections with another name (or none) go to the listener's HTTP routes.",
			Example: "db.example.com", set: setTCPSNI, get: onTCPIf(func(t *TCP) any { return t.SNI }, func(t *TCP) bool { return len(t.SNI) > 0 })},
		{Label: "tcp.tls", JSON: "config.tcp.tls", Kind: KindEnum, Default: TCPPassthrough, Code: diagnostics.TCPTLSUnsupported,
			Values:  []string{TCPPassthrough, TCPTerminate},
			Doc:     "TCP routes only, with `tcp.sni`: how TLS is handled. `passthrough` relays the TLS bytes untouched (the backend terminates TLS with its own certificate); `terminate` has Levee complete the handshake with its certificates (those of the HTTPS routes: --tls-cert-dir, --tls-cert, the default certificate) and relay the plain bytes to the backend. Another value is W094 and passthrough applies.",
			Example: TCPPassthrough, set: setTCPTLS, get: onTCPIf(func(t *TCP) any { return t.TLS }, func(t *TCP) bool { return t.TLS != "" })},
		{Label: "tcp.connectTimeout", JSON: "config.tcp.connect_timeout", Kind: KindDuration, Default: DefaultTCPConnectTimeout.String(), Code: diagnostics.BadTCP,
			Doc:     "TCP routes only: how long Levee waits for a backend's TCP connect (whole seconds or a Go duration). A connect that times out is a backend failure (breaker, next backend).",
			Example: "2s", set: setTCPDuration(func(t *TCP) *time.Duration { return &t.ConnectTimeout }), get: onTCP(func(t *TCP) any { return t.ConnectTimeout })},
		{Label: "tcp.idleTimeout", JSON: "config.tcp.idle_timeout", Kind: KindDuration, Default: DefaultTCPIdleTimeout.String(), Code: diagnostics.BadTCP,
			Doc:     "TCP routes only: a connection that moves no byte in either direction for this long is closed (both sides).",
			Example: "1h", set: setTCPDuration(func(t *TCP) *time.Duration { return &t.IdleTimeout }), get: onTCP(func(t *TCP) any { return t.IdleTimeout })},
		{Label: "tcp.maxConnections", JSON: "config.tcp.max_connections", Kind: KindInt, Default: "0 (no limit)", Code: diagnostics.BadTCP,
			Doc:     fmt.Sprintf("TCP routes only: the most client connections the route holds open at once (0-%d, 0 = no limit); one beyond it is closed at once and counted.", MaxTCPConnections),
			Example: "100", set: setTCPMaxConnections, get: onTCPIf(func(t *TCP) any { return t.MaxConnections }, func(t *TCP) bool { return t.MaxConnections > 0 })},
	}
}

// tcpShared are the rows of the HTTP table a TCP route reads too: where
// its backends are, the health check's timing (the check is a TCP
// connect), and the breaker's connect-level rules (an outcome is a
// connect result, so statuses and slow calls mean nothing there).
var tcpShared = map[string]bool{
	"port": true, "weight": true,
	"healthCheck.interval": true, "healthCheck.timeout": true, "healthCheck.rise": true, "healthCheck.fall": true,
	"circuitBreaker.enabled": true, "circuitBreaker.threshold": true, "circuitBreaker.minRequests": true,
	"circuitBreaker.window": true, "circuitBreaker.consecutiveFailures": true, "circuitBreaker.cooldown": true,
	"circuitBreaker.maxCooldown": true, "circuitBreaker.halfOpenProbes": true, "circuitBreaker.successesToClose": true,
	"circuitBreaker.probeTimeout": true, "circuitBreaker.cooldownJitter": true, "circuitBreaker.mode": true,
}

// isTCPRow reports a row of tcpFields.
func isTCPRow(f *Field) bool { return strings.HasPrefix(f.Label, "tcp.") }

// appliesTo reports whether field f means something on an entrypoint of
// protocol proto.
func appliesTo(f *Field, proto string) bool {
	switch proto {
	case ProtocolTCP:
		return isTCPRow(f) || tcpShared[f.Label]
	case ProtocolUDP:
		return isUDPRow(f) || udpShared[f.Label]
	}
	return !isTCPRow(f) && !isUDPRow(f)
}

// skipped reports (W093) a field that does not apply to the draft's
// protocol; apply then ignores it.
func (d *draft) skipped(f *Field, key string, v any) bool {
	if appliesTo(f, d.ep.Protocol) {
		return false
	}
	msg := fmt.Sprintf("%s does not apply to a TCP route: ignored", f.Label)
	hint := "TCP routes read tcp.*, port, weight, healthCheck.interval|timeout|rise|fall and the connect-level circuitBreaker.* fields"
	switch {
	case d.ep.Protocol == ProtocolUDP:
		msg, hint = fmt.Sprintf("%s does not apply to a UDP route: ignored", f.Label), "UDP routes read udp.*, port, weight and the connect-level circuitBreaker.* fields"
	case isUDPRow(f):
		msg, hint = fmt.Sprintf("%s applies to UDP routes only (<prefix>.udp.<service>.%s): ignored", f.Label, strings.TrimPrefix(f.Label, "udp.")), ""
	case d.ep.Protocol != ProtocolTCP:
		msg = fmt.Sprintf("%s applies to TCP routes only (<prefix>.tcp.<service>.%s): ignored", f.Label, strings.TrimPrefix(f.Label, "tcp."))
		hint = ""
	}
	d.add(diagnostics.TCPFieldIgnored, key, displayValue(v), "", msg, hint)
	return true
}

// onTCP reads a TCP field for the payload of a TCP route.
func onTCP(read func(t *TCP) any) getter {
	return onTCPIf(read, func(*TCP) bool { return true })
}

// onTCPIf is onTCP for a field written only when keep says so.
func onTCPIf(read func(t *TCP) any, keep func(t *TCP) bool) getter {
	return func(ep *Entrypoint, _ *Backend) (any, bool) {
		if ep.Protocol != ProtocolTCP || !keep(&ep.TCP) {
			return nil, false
		}
		return read(&ep.TCP), true
	}
}

func setTCPListener(d *draft, f *Field, key string, v any) {
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if !ValidListenerName(s) {
			return fmt.Errorf("want a listener name of lower-case letters, digits, '-' and '_'")
		}
		return nil
	})
	if ok {
		d.ep.TCP.Listener = s
	}
}

func setTCPSNI(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.TCP.SNI = normalizeList(items, func(h string) (string, bool) {
		norm := strings.TrimSuffix(strings.ToLower(h), ".")
		return norm, validRouteHost(norm)
	}, func(h string) {
		d.add(f.Code, key, h, "", fmt.Sprintf("invalid server name %q dropped: want a host name (a leading *. is a wildcard)", h), "")
	})
}

func setTCPTLS(d *draft, f *Field, key string, v any) {
	s, err := toString(v)
	if err == nil {
		switch s = strings.ToLower(s); s {
		case TCPPassthrough, TCPTerminate:
			d.ep.TCP.TLS = s
			return
		default:
			err = fmt.Errorf("want passthrough or terminate")
		}
	}
	d.bad(f, key, v, err.Error())
}

func setTCPDuration(field func(t *TCP) *time.Duration) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		t, ok := decode(d, f, key, v, toDuration, func(t time.Duration) error {
			if t <= 0 {
				return fmt.Errorf("must be positive")
			}
			return nil
		})
		if ok {
			*field(&d.ep.TCP) = t
		}
	}
}

func setTCPMaxConnections(d *draft, f *Field, key string, v any) {
	if n, ok := decode(d, f, key, v, toInt, between(0, MaxTCPConnections, fmt.Sprintf("0-%d", MaxTCPConnections))); ok {
		d.ep.TCP.MaxConnections = n
	}
}

// asTCP makes the draft a TCP route's: its TCP fields at their defaults.
func (d *draft) asTCP() {
	d.ep.Protocol = ProtocolTCP
	d.ep.TCP = TCP{ConnectTimeout: DefaultTCPConnectTimeout, IdleTimeout: DefaultTCPIdleTimeout}
}

// tcpRules applies the cross-field rules of a TCP route and reports
// whether it can be routed: it needs a listener (E008), and tls means
// something only with sni (a route with sni and no tls passes TLS
// through, the default).
func (d *draft) tcpRules() bool {
	t := &d.ep.TCP
	if len(t.SNI) == 0 {
		t.TLS = ""
		if g, given := d.given["tcp.tls"]; given {
			d.add(diagnostics.TCPFieldIgnored, g.key, g.value, "", "tcp.tls applies only with tcp.sni (on a TLS listener): ignored", "add tcp.sni")
		}
	}
	if t.Listener == "" {
		d.add(diagnostics.TCPNoListener, d.keyOf(fieldByLabel("tcp.listener")), "", "",
			"no valid listener: the TCP route is not routed", "name a listener declared with --listen name=addr,tcp (or a TLS listener with tcp.sni)")
		return false
	}
	return true
}

// DecodeTCPLabels decodes one TCP service's label fields (the part after
// <prefix>.tcp.<service>.), as DecodeLabels does an HTTP service's. A
// field is the name of a tcp.* row without "tcp." (listener, sni, tls,
// …), or a row TCP routes share with HTTP (port, weight,
// circuitBreaker.*).
func DecodeTCPLabels(fields map[string]string, src diagnostics.Source, key func(field string) string) (LabelConfig, []diagnostics.Diagnostic) {
	named := make(map[string]string, len(fields))
	written := make(map[string]string, len(fields))
	for name, value := range fields {
		canon := name
		if _, _, ok := lookupLabel("tcp." + name); ok {
			canon = "tcp." + name
		}
		named[canon] = value
		written[canon] = name
	}
	return decodeLabels(named, src, func(field string) string {
		if w, ok := written[field]; ok {
			return key(w)
		}
		return key(strings.TrimPrefix(field, "tcp."))
	}, (*draft).asTCP)
}
