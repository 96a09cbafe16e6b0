package provider

// The series every provider with a connection to its source exports,
// labelled provider="<name>" (docker, swarm, file). A Prometheus registry
// takes several collectors of one name only when their help texts are the
// same, so the providers share these.
const (
	ConnectedMetric = "levee_provider_connected"
	ConnectedHelp   = "1 while the provider is connected to its source (docker: event stream open, full sync delivered, pings answered; file: every directory watched and read), else 0."
	StateMetric     = "levee_provider_state"
	StateHelp       = "1 for the provider's current connection state (connecting, connected, disconnected), 0 for the others."
)
