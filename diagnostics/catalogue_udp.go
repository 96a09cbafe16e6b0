package diagnostics

// Codes of UDP routes (levee.udp.<service>.*, protocol Udp).
const (
	// UDPNoListener is a UDP route without a valid listener: not routed.
	UDPNoListener Code = "E009"
	// BadUDP is an invalid udp.* value.
	BadUDP Code = "W074"
	// BadUDPMaxSessions is an invalid udp.maxSessions: the default applies.
	BadUDPMaxSessions Code = "W097"
	// BadUDPAnswerTimeout is an invalid udp.circuitBreaker.answerTimeout:
	// the breaker does not wait for answers.
	BadUDPAnswerTimeout Code = "W099"
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
		{
			Code: BadUDPMaxSessions, Severity: Warn, Title: "invalid UDP session bound",
			Effect:  "The listener holds at most 10000 sessions (the default); beyond it a new client takes the place of the least recently active session.",
			Fix:     "Write a whole number of sessions from 1 to 1000000.",
			Example: "levee.udp.dns.maxSessions=0",
		},
		{
			Code: BadUDPAnswerTimeout, Severity: Warn, Title: "invalid UDP answer timeout",
			Effect:  "The breaker does not wait for answers (the default, off): only ICMP port unreachable counts as a failure.",
			Fix:     "Write a positive duration (`2s`, or whole seconds).",
			Example: "levee.udp.dns.circuitBreaker.answerTimeout=soon",
		},
	}
}
