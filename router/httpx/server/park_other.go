//go:build !linux

package server

import (
	"errors"
	"time"
)

var errParkUnsupported = errors.New("server: parking idle connections is not supported on this system")

// parkSet has no implementation here: idle connections keep their
// goroutines.
type parkSet struct{}

func newParkSet(*Server) (*parkSet, error)      { return nil, errParkUnsupported }
func (*parkSet) add(*conn, time.Duration) error { return errParkUnsupported }
func (*parkSet) forget(*conn)                   {}
func (*parkSet) close()                         {}
