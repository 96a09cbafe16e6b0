package diagnostics

// storeEntries are the codes of the shared breaker store (codes 075-079); their Code constants are declared here too.
func storeEntries() []Entry {
	return nil
}
