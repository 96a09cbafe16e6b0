// Package fieldname compares header field names the way the backends
// behind a proxy may read them. CGI (RFC 3875 4.1.18) and the gateways
// modelled on it (FastCGI, SCGI, uWSGI, Rack, WSGI, Apache's environment)
// turn a field name into a variable by upper-casing it and replacing '-'
// (some: every byte that is not a letter or a digit) with '_', so that
// X-Auth-User, X_Auth_User and X.Auth.User all become HTTP_X_AUTH_USER:
// for them these are one field. A proxy that removes, sets or trusts a
// field must therefore treat every spelling of its name alike.
//
// Only names of letters, digits and dashes are unambiguous (Plain); the
// others alias one. Nothing here allocates.
package fieldname

import "net/http"

// notPlain is 1 for the bytes of an ambiguous name: all but letters,
// digits and '-'.
var notPlain = func() (t [256]byte) {
	for c := range t {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-') {
			t[c] = 1
		}
	}
	return t
}()

// Plain reports whether name has only letters, digits and dashes, the
// names no gateway reads as another. It reads every byte without a
// branch: names are short, and nearly all are plain.
func Plain(name string) bool {
	var bad byte
	for i := 0; i < len(name); i++ {
		bad |= notPlain[name[i]]
	}
	return bad == 0
}

// Equal reports whether a and b name the same field for such a gateway:
// equal when ASCII case is ignored and every byte other than a letter or
// a digit is taken for '-'.
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

// DeleteAliases deletes from h every field whose name is not Plain and is
// Equal to one of names: the spellings a gateway would read as that
// field, other than the one with dashes.
func DeleteAliases(h http.Header, names []string) {
	for k := range h {
		if Plain(k) {
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

// fold maps c to the byte Equal compares: lower case, and '-' for every
// byte that is not a letter or a digit.
func fold(c byte) byte {
	switch {
	case 'A' <= c && c <= 'Z':
		return c + ('a' - 'A')
	case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		return c
	}
	return '-'
}
