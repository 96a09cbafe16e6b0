//go:build !linux

package server

import "net"

// listenConfig lets net set keep-alive on each accepted connection.
func listenConfig() net.ListenConfig {
	return net.ListenConfig{KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: KeepAliveIdle, Interval: KeepAliveInterval, Count: KeepAliveCount,
	}}
}
