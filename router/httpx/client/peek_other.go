//go:build !unix

package client

import "net"

// peerClosed cannot peek on this platform: a closed pooled connection is
// found when used, and idempotent requests are sent again.
func peerClosed(net.Conn) bool { return false }
