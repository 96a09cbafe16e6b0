package diagnostics

// swarmEntries are the codes of the Swarm provider (codes 070-074); their Code constants are declared here too.
func swarmEntries() []Entry {
	return nil
}
