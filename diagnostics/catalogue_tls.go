package diagnostics

// tlsEntries are the codes of TLS and certificates (codes 040-049); their Code constants are declared here too.
func tlsEntries() []Entry {
	return nil
}
