//go:build !linux

package sockio

import "net"

// Socket is Linux-only; elsewhere New returns nil and the
// connection is used directly.
type Socket struct{}

// New returns nil: raw socket I/O is implemented for Linux only.
func New(net.Conn) *Socket { return nil }

// Read is never called: New returns nil.
func (*Socket) Read([]byte) (int, error) { panic("sockio: Socket on a non-Linux system") }

// Write is never called: New returns nil.
func (*Socket) Write([]byte) (int, error) { panic("sockio: Socket on a non-Linux system") }

// TryRead is never called: New returns nil.
func (*Socket) TryRead([]byte) (int, error) { panic("sockio: Socket on a non-Linux system") }

// WaitReadable is never called: New returns nil.
func (*Socket) WaitReadable() error { panic("sockio: Socket on a non-Linux system") }

// Control is not available on this system.
func (*Socket) Control(func(fd uintptr)) error { panic("sockio: Socket on a non-Linux system") }
