package server

import (
	"net"
	"syscall"
)

// listenConfig sets the keep-alive options on the listening socket, which
// accepted sockets inherit (tcp(7): a socket returned by accept(2) copies
// the listener's options), and turns net's per-connection settings off.
func listenConfig() net.ListenConfig {
	return net.ListenConfig{
		KeepAlive: -1,
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				opts := []struct {
					level, name, value int
				}{
					{syscall.SOL_SOCKET, syscall.SO_KEEPALIVE, 1},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE, int(KeepAliveIdle.Seconds())},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL, int(KeepAliveInterval.Seconds())},
					{syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT, KeepAliveCount},
				}
				for _, o := range opts {
					if serr = syscall.SetsockoptInt(int(fd), o.level, o.name, o.value); serr != nil {
						return
					}
				}
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
}
