package config

// tlsFields are the tls.* rows: HTTPS, redirect, HSTS, listeners (issue 13).
func tlsFields() []Field {
	return nil
}
