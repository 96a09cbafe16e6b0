// Package certfile names and describes certificate files: a CERT[,KEY]
// pair as --tls-cert and a route's tls.clientCert take it, and a
// signature of files (names, sizes, times, modes, through links) whose
// change means they must be read again. It reads no certificate and
// imports only the standard library, so that the data plane's backend TLS
// and the listener's certificate store share it without sharing anything
// else.
package certfile

import (
	"encoding/pem"
	"fmt"
	"os"
	"strings"
)

// Pair names one certificate's files: a PEM chain and its key, or one PEM
// file holding both (Key "").
type Pair struct {
	Cert, Key string
}

// ParsePair reads one CERT[,KEY] item: PEM files of a certificate chain
// and its key, whatever their names, KEY left out when CERT holds both.
func ParsePair(item string) (Pair, error) {
	parts := strings.Split(strings.TrimSpace(item), ",")
	if len(parts) > 2 || strings.TrimSpace(parts[0]) == "" || (len(parts) == 2 && strings.TrimSpace(parts[1]) == "") {
		return Pair{}, fmt.Errorf("%q: want CERT[,KEY]: PEM files of a certificate chain and its key (KEY left out when CERT holds both)", item)
	}
	p := Pair{Cert: strings.TrimSpace(parts[0])}
	if len(parts) == 2 {
		p.Key = strings.TrimSpace(parts[1])
	}
	return p, nil
}

// Signature summarises the files of pairs, following links (a missing
// file is described as such): equal signatures mean the same files.
func Signature(pairs []Pair) string {
	var b strings.Builder
	for _, f := range pairs {
		for _, name := range []string{f.Cert, f.Key} {
			if name == "" {
				continue
			}
			b.WriteString(name)
			DescribeTarget(&b, name)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Describe writes what a signature compares of a file: size, time, mode.
func Describe(b *strings.Builder, info os.FileInfo) {
	fmt.Fprintf(b, " %d %d %v", info.Size(), info.ModTime().UnixNano(), info.Mode())
}

// DescribeTarget describes the file at path, through links, or says it
// is missing (a dangling link, a removed file).
func DescribeTarget(b *strings.Builder, path string) {
	if info, err := os.Stat(path); err == nil {
		Describe(b, info)
	} else {
		b.WriteString(" missing")
	}
}

// HasPEMKey reports whether PEM data b holds a private key block.
func HasPEMKey(b []byte) bool {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return false
		}
		if strings.HasSuffix(block.Type, "PRIVATE KEY") {
			return true
		}
	}
}
