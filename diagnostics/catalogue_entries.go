package diagnostics

func entries() []Entry {
	return []Entry{
		// TODO(labels helper): complete every entry with Effect, Fix, Example.
		{Code: MissingHost, Severity: Error, Title: "service has no host"},
	}
}
