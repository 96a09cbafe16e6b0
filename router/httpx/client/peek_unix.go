//go:build unix

package client

import (
	"net"
	"syscall"
	"time"
)

// peerClosed reports whether the backend has closed an idle connection (or
// sent something unasked, which makes it unusable too). It peeks without
// blocking and without consuming: one recv(MSG_PEEK|MSG_DONTWAIT).
func peerClosed(c net.Conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	// The last exchange may have left a read deadline that has passed
	// since (awaitHead's poll): the peek itself never waits, and the next
	// exchange sets its own.
	_ = c.SetReadDeadline(time.Time{})
	closed := false
	var buf [1]byte
	err = raw.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr == syscall.EAGAIN || rerr == syscall.EWOULDBLOCK:
			// Nothing to read: alive and idle, as it should be.
		case rerr != nil, n >= 0:
			closed = true // EOF (n == 0), an error, or unexpected bytes
		}
		return true // never wait for readiness
	})
	return err != nil || closed
}
