package diagnostics

// Codes of UDP routes (levee.udp.<service>.*, protocol Udp).
const (
	// UDPNoListener is a UDP route without a valid listener: not routed.
	UDPNoListener Code = "E009"
	// BadUDP is an invalid udp.* value.
	BadUDP Code = "W074"
)

// udpEntries are the codes of UDP routes.
func udpEntries() []Entry {
	return []Entry{
		{
			Code: UDPNoListener, Severity: Error, Title: "UDP route without a listener",
			Effect:  "The UDP service is not routed: a UDP route is matched by its listener alone.",
			Fix:     "Name a listener declared with `--listen name=addr,udp`, and declare it.",
			Example: "levee.udp.dns.port=53   # without levee.udp.dns.listener=dns",
		},
		{
			Code: BadUDP, Severity: Warn, Title: "invalid UDP setting",
			Effect:  "The field falls back to its default (idleTimeout 30s); a bad listener name leaves the route without one (E009).",
			Fix:     "`listener` is a listener name (lower-case letters, digits, '-' and '_'); `idleTimeout` a positive duration.",
			Example: "levee.udp.dns.idleTimeout=never",
		},
	}
}
