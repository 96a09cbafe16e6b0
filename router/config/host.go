package config

import "strings"

// AppendRequestHost appends to dst the form of a request's Host header
// that route hosts are compared in: without a port, without the brackets
// of an IPv6 literal, without a trailing dot, in lower case (RFC 9110
// 4.2.3: the host is case-insensitive; RFC 1034 3.1: "h.test." and
// "h.test" name the same node). Routing and every policy that keys by host
// use this one form, so no spelling of a host reaches a route or a limit
// as another host. It does not allocate when dst has room.
func AppendRequestHost(dst []byte, host string) []byte {
	if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[i:], ']') < 0 {
		host = host[:i]
	}
	if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
		host = host[1 : len(host)-1]
	}
	if len(host) > 1 && host[len(host)-1] == '.' {
		host = host[:len(host)-1]
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}
