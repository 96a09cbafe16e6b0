package main

import (
	"errors"
	"strings"
)

// pathsFlag is a repeatable flag of paths (--config-dir, --config-file).
// Its environment form holds several, separated by ';' as LEVEE_LISTEN
// and LEVEE_TLS_CERT do.
type pathsFlag struct{ paths *[]string }

func (f pathsFlag) String() string {
	if f.paths == nil {
		return ""
	}
	return strings.Join(*f.paths, ";")
}

func (f pathsFlag) Set(v string) error {
	added := false
	for _, item := range strings.Split(v, ";") {
		if item = strings.TrimSpace(item); item != "" {
			*f.paths = append(*f.paths, item)
			added = true
		}
	}
	if !added {
		return errors.New("want a path")
	}
	return nil
}
