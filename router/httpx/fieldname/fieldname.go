// Package fieldname compares header field names the way the backends
// behind a proxy may read them. CGI (RFC 3875 4.1.18) and the gateways
// modelled on it (FastCGI, SCGI, uWSGI, Rack, WSGI) turn a field name into
// a variable by upper-casing it and replacing '-' with '_', so that
// X-Auth-User and X_Auth_User both become HTTP_X_AUTH_USER: for them the
// two are one field. A proxy that removes, sets or trusts a field must
// therefore treat every spelling of its name alike.
//
// Nothing here allocates.
package fieldname

import (
	"net/http"
	"strings"
)

// Equal reports whether a and b name the same field for such a gateway:
// equal when ASCII case is ignored and '_' is taken for '-'.
func Equal(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if fold(a[i]) != fold(b[i]) {
			return false
		}
	}
	return true
}

// HasPrefix reports whether name begins with prefix in the sense of Equal.
func HasPrefix(name, prefix string) bool {
	return len(name) >= len(prefix) && Equal(name[:len(prefix)], prefix)
}

// HasUnderscore reports whether any field name in h has an underscore:
// one scan of the names, the whole cost when none has.
func HasUnderscore(h http.Header) bool {
	for k := range h {
		if strings.IndexByte(k, '_') >= 0 {
			return true
		}
	}
	return false
}

// DeleteUnderscoreSpellings deletes from h every field whose name has an
// underscore and is Equal to one of names: the spellings a gateway would
// read as that field, other than the one with dashes.
func DeleteUnderscoreSpellings(h http.Header, names []string) {
	for k := range h {
		if strings.IndexByte(k, '_') < 0 {
			continue
		}
		for _, n := range names {
			if Equal(k, n) {
				delete(h, k)
				break
			}
		}
	}
}

// fold maps c to the byte Equal compares: lower case, '_' as '-'.
func fold(c byte) byte {
	switch {
	case c == '_':
		return '-'
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	}
	return c
}
