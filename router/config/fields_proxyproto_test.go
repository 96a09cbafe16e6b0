package config

import "github.com/levee-proxy/levee/diagnostics"

func init() {
	fieldCases = append(fieldCases, fieldCase{field: "tcp.proxyProtocol", get: func(d cfgDecoded) any { return d.ep.TCP.ProxyProtocol },
		valid: []validCase{{"v1", "", 1}, {"V2", "", 2}, {"2", `"2"`, 2}},
		invalid: []invalidCase{
			{label: "v3", code: diagnostics.BadProxyProtocol},
			{label: "yes", code: diagnostics.BadProxyProtocol},
		}})
}
