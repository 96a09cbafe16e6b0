package config

// fallbackFields are the circuitBreaker.fallback* and serveStale rows (issue 18).
func fallbackFields() []Field {
	return nil
}
