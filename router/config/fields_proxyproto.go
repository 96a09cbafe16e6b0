package config

import (
	"fmt"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// proxyProtocolFields are the rows of the PROXY protocol a TCP route
// speaks toward its backends (labels <prefix>.tcp.<service>.proxyProtocol).
func proxyProtocolFields() []Field {
	return []Field{
		{Label: "tcp.proxyProtocol", JSON: "config.tcp.proxy_protocol", Kind: KindEnum, Default: "(none)", Code: diagnostics.BadProxyProtocol,
			Values:  []string{"v1", "v2"},
			Doc:     "TCP routes only: Levee opens each backend connection with a PROXY protocol header (haproxy's proxy-protocol.txt) naming the client's address and the address it connected to, `v1` the text header, `v2` the binary one, so that a backend which reads it (Postgres behind pgbouncer, a mail server, nginx with `proxy_protocol`) sees the real client. `1` and `2` are read as `v1` and `v2`. Another value is W098 and no header is sent. See [tcp.md](tcp.md#proxy-protocol).",
			Example: "v2", set: setTCPProxyProtocol, get: onTCPIf(func(t *TCP) any { return fmt.Sprintf("v%d", t.ProxyProtocol) }, func(t *TCP) bool { return t.ProxyProtocol > 0 })},
	}
}

func setTCPProxyProtocol(d *draft, f *Field, key string, v any) {
	s, err := toString(v)
	if err == nil {
		switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "v") {
		case "1":
			d.ep.TCP.ProxyProtocol = 1
			return
		case "2":
			d.ep.TCP.ProxyProtocol = 2
			return
		}
		err = fmt.Errorf("want v1 or v2")
	}
	d.bad(f, key, v, err.Error())
}
