package diagnostics

// Codes of the PROXY protocol toward TCP backends.
const (
	// BadProxyProtocol is a tcp.proxyProtocol value that names no PROXY
	// protocol version: no header is sent.
	BadProxyProtocol Code = "W098"
)

// proxyProtocolEntries are the codes of the PROXY protocol.
func proxyProtocolEntries() []Entry {
	return []Entry{
		{
			Code: BadProxyProtocol, Severity: Warn, Title: "invalid PROXY protocol version",
			Effect:  "No PROXY protocol header is sent to the route's backends: they see Levee's address as the client's.",
			Fix:     "Use `proxyProtocol=v1` (the text header) or `proxyProtocol=v2` (the binary one), as the backend expects; leave it out for none.",
			Example: "levee.tcp.pg.proxyProtocol=v3",
		},
	}
}
