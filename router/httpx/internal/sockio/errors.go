package sockio

import "errors"

// ErrWouldBlock is TryRead's answer when no byte is ready to be read.
var ErrWouldBlock = errors.New("sockio: nothing to read yet")
