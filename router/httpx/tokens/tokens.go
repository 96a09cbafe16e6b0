// Package tokens reads the comma-separated lists of HTTP header fields
// (RFC 9110 5.6.1), such as Connection, Upgrade and TE, for both sides of
// the proxy: the router and its backend client read them the same way.
//
// Whether a list holds a given token is httpguts.HeaderValuesContainsToken's
// to say (golang.org/x/net/http/httpguts, the parser net/http itself
// uses); this package adds what httpguts does not export, the elements
// themselves. Elements are trimmed of optional whitespace (space and tab)
// as httpguts trims them, and nothing here allocates but the canonical
// form of a name that is not canonical already.
package tokens

import (
	"net/http"
	"strings"
)

// Next splits the first element off the comma-separated list: it returns
// the element without surrounding whitespace (possibly empty) and the
// rest of the list after its comma. Loop while the rest is not empty.
func Next(list string) (elem, rest string) {
	elem, rest, _ = strings.Cut(list, ",")
	return trimOWS(elem), rest
}

// AppendConnectionNamed appends to dst, in canonical form, the header
// names that the Connection field values list (RFC 9110 7.6.1), and
// returns the extended slice. A proxy must not pass the fields so named
// on. The options close, keep-alive and upgrade are left out: close names
// no field, Keep-Alive is removed as hop-by-hop anyway, and Upgrade is the
// proxy's to handle (a 101 keeps it until it is answered).
func AppendConnectionNamed(dst []string, values ...string) []string {
	for _, v := range values {
		for v != "" {
			var name string
			name, v = Next(v)
			if name == "" || isOption(name, "close") || isOption(name, "keep-alive") || isOption(name, "upgrade") {
				continue
			}
			dst = append(dst, http.CanonicalHeaderKey(name))
		}
	}
	return dst
}

// isOption compares a list element with a lower-case option, ASCII case
// insensitively (as httpguts compares tokens).
func isOption(elem, option string) bool {
	if len(elem) != len(option) {
		return false
	}
	for i := 0; i < len(elem); i++ {
		c := elem[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != option[i] {
			return false
		}
	}
	return true
}

func trimOWS(s string) string {
	for s != "" && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for s != "" && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
