package main

import (
	stdlog "log"
	"strings"

	"github.com/rs/zerolog"
)

// stdLogger adapts zerolog for net/http's ErrorLog, so TLS handshake and
// malformed-request errors become structured warn events instead of
// unstructured stderr lines.
func stdLogger(log zerolog.Logger, component string) *stdlog.Logger {
	return stdlog.New(levelWriter{log.With().Str("component", component).Logger()}, "", 0)
}

type levelWriter struct{ log zerolog.Logger }

func (w levelWriter) Write(p []byte) (int, error) {
	w.log.Warn().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
