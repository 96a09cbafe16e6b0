package tcp

import (
	"fmt"
	"net"

	"github.com/pires/go-proxyproto"
)

// sendProxyHeader opens the backend connection back with a PROXY
// protocol header of version (1 or 2; haproxy's proxy-protocol.txt)
// naming the client's address as the source and the address the client
// connected to as the destination. Version 0 sends nothing. The client's
// address is c's remote address: the one a trusted load balancer's own
// PROXY header gave, on a listener that accepts them.
func sendProxyHeader(back, c net.Conn, version int) error {
	if version == 0 {
		return nil
	}
	h := proxyproto.HeaderProxyFromAddrs(byte(version), c.RemoteAddr(), c.LocalAddr())
	if _, err := h.WriteTo(back); err != nil {
		return fmt.Errorf("write PROXY v%d header to %s: %w", version, back.RemoteAddr(), err)
	}
	return nil
}
