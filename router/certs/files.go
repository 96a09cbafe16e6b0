package certs

import "github.com/levee-proxy/levee/router/certs/certfile"

// ParseFilePair reads one CERT[,KEY] item, as --tls-cert takes it
// (certfile.ParsePair).
func ParseFilePair(item string) (FilePair, error) { return certfile.ParsePair(item) }
