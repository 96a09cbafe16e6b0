package diagnostics

// Codes of TCP routes (levee.tcp.<service>.*, protocol Tcp).
const (
	// TCPNoListener is a TCP route without a valid listener: not routed.
	TCPNoListener Code = "E008"
	// BadTCP is an invalid tcp.* value.
	BadTCP Code = "W092"
	// TCPFieldIgnored is a field that does not apply to the route's
	// protocol: an HTTP field on a TCP route, or a tcp.* field on an HTTP
	// route.
	TCPFieldIgnored Code = "W093"
	// TCPTLSUnsupported is a tcp.tls value Levee does not support.
	TCPTLSUnsupported Code = "W094"
	// TCPListenerMismatch is a TCP route whose listener is not declared,
	// or not of the kind the route needs.
	TCPListenerMismatch Code = "W095"
)

// tcpEntries are the codes of TCP routes.
func tcpEntries() []Entry {
	return []Entry{
		{
			Code: TCPNoListener, Severity: Error, Title: "TCP route without a listener",
			Effect:  "The TCP service is not routed: a TCP route is matched by its listener (and on a TLS listener by SNI), never by host.",
			Fix:     "Name a listener declared with `--listen name=addr,tcp`, or a TLS listener together with `sni`.",
			Example: "levee.tcp.pg.port=5432   # without levee.tcp.pg.listener=postgres",
		},
		{
			Code: BadTCP, Severity: Warn, Title: "invalid TCP setting",
			Effect:  "The field falls back to its default (connectTimeout 5s, idleTimeout 10m, maxConnections no limit); a bad server name in `sni` is dropped, a bad listener name leaves the route without one (E008).",
			Fix:     "`listener` is a listener name (lower-case letters, digits, '-' and '_'); `sni` host names; the timeouts positive durations; `maxConnections` a whole number from 0.",
			Example: "levee.tcp.pg.idleTimeout=forever",
		},
		{
			Code: TCPFieldIgnored, Severity: Warn, Title: "field does not apply to this protocol",
			Effect:  "The field is ignored: an HTTP field (host, path, policies, statuses) on a TCP or UDP route, a TCP field (sni, tls, ...) on an HTTP or UDP route, or a UDP field on an HTTP or TCP route.",
			Fix:     "Remove the field, or move it to a service of the protocol it belongs to (`levee.http.<service>.`, `levee.tcp.<service>.` or `levee.udp.<service>.`).",
			Example: "levee.tcp.pg.host=db.example.com",
		},
		{
			Code: TCPTLSUnsupported, Severity: Warn, Title: "unsupported TCP TLS mode",
			Effect:  "`passthrough` applies: the TLS bytes are relayed untouched and the backend terminates TLS.",
			Fix:     "Use `tls=passthrough` with a backend that serves TLS itself, or `tls=terminate` for Levee to terminate TLS and relay plain bytes.",
			Example: "levee.tcp.db.tls=offload",
		},
		{
			Code: TCPListenerMismatch, Severity: Warn, Title: "TCP or UDP route on a listener that cannot serve it",
			Effect:  "The route is not served: its listener is not declared, or a TCP route without `sni` names a listener that is not a TCP listener (`--listen name=addr,tcp`), a TCP route with `sni` names one that is not a TLS listener, or a UDP route names one that is not a UDP listener (`--listen name=addr,udp`).",
			Fix:     "Declare the listener (`--listen postgres=:5432,tcp`, `--listen dns=:5353,udp`), or give `sni` and name a TLS listener (`--listen websecure=:443,tls`).",
			Example: "levee.tcp.pg.listener=postgres   # without --listen postgres=:5432,tcp",
		},
	}
}
