package config

import "github.com/levee-proxy/levee/diagnostics"

// earlyDataFields are the rows of HTTP/3 0-RTT early data.
func earlyDataFields() []Field {
	return []Field{
		{Label: "earlyData", JSON: "config.early_data", Kind: KindBool, Default: "false", Code: diagnostics.BadEarlyData,
			Doc:     "On a listener with `--listen name=addr,tls,h3,0rtt`: a safe request (GET, HEAD, OPTIONS) that arrived in QUIC 0-RTT early data is forwarded at once, with `Early-Data: 1` (RFC 8470 5.1), instead of waiting for the handshake to complete. Early data can be replayed by anyone who saw it: set it only where a repeated safe request does no harm. Unsafe methods always wait. A backend's 425 Too Early to such a request is retried once the handshake completes, without `Early-Data`. Another value is W096 and the default applies. See [http3.md](http3.md#0-rtt).",
			Example: "true", set: setEarlyData, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.EarlyData }))},
	}
}

func setEarlyData(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.ep.EarlyData = b
	}
}
