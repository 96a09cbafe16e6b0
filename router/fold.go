package router

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/levee-proxy/levee/router/config"
)

// Case-insensitive routes (path.caseInsensitive) are matched as a
// case-insensitive backend (IIS, ASP.NET on Windows) reads a path, so that
// no spelling of a guarded prefix ("/ADMIN", "/admin.") reaches such a
// backend through an open route beside it. Their prefixes live in
// hostTable.byFolded under their folded form; the request path is folded
// once per match on a host that has any.

// foldPath appends p as a case-insensitive backend reads it to b: letters
// in lower case, and the dots and spaces that end a segment removed
// (Windows drops them from file names). Beyond ASCII, letters are compared
// as Windows does, by their upper case ("ı" and "K", the Kelvin sign, are
// "i" and "k" then); that one case allocates.
func foldPath(b []byte, p string) []byte {
	for i := 0; i < len(p); i++ {
		if p[i] >= utf8.RuneSelf {
			p = strings.ToLower(strings.ToUpper(p))
			break
		}
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c == '/' {
			b = trimSegmentEnd(b)
		}
		b = append(b, c)
	}
	b = trimSegmentEnd(b)
	if len(b) == 0 {
		b = append(b, '/')
	}
	return b
}

// trimSegmentEnd removes the dots and spaces that end b's last segment.
func trimSegmentEnd(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '.' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// regexExpr is the expression compiled for ep's PathRegex: on a
// case-insensitive route it ignores case, as the route's prefix does (it
// sees the folded path, in lower case, so "^/Admin" must still match).
func regexExpr(ep *config.Entrypoint) string {
	if ep.PathCaseInsensitive {
		return "(?i)" + ep.PathRegex
	}
	return ep.PathRegex
}

// walkFolded is walkPrefixes over the folded path f, which is also what
// the routes' pathRegex sees: a regex guard must not be passed by a
// spelling. f becomes a string only for a route with a regex.
func walkFolded(m map[string][]*Route, method string, f []byte, l *Listener, on listenerFilter) (*Route, int) {
	p, fs := f, ""
	for {
		for _, r := range m[string(p)] {
			if len(r.methods) > 0 && !slices.Contains(r.methods, method) {
				continue
			}
			if r.regex != nil {
				if fs == "" {
					fs = string(f)
				}
				if !r.regex.MatchString(fs) {
					continue
				}
			}
			if on == nil || on(r, l) {
				if len(p) == 1 {
					return r, 0
				}
				return r, bytes.Count(p, slashKey)
			}
		}
		if len(p) == 1 && p[0] == '/' {
			return nil, 0
		}
		i := bytes.LastIndexByte(p, '/')
		if i <= 0 {
			p = slashKey
		} else {
			p = p[:i]
		}
	}
}

// slashKey is the root prefix key, read only.
var slashKey = []byte{'/'}

// dropSegments removes the first n segments of the path p, which starts
// with "/"; what is left starts with "/" too.
func dropSegments(p string, n int) string {
	for ; n > 0 && p != ""; n-- {
		i := strings.IndexByte(p[1:], '/')
		if i < 0 {
			return "/"
		}
		p = p[i+1:]
	}
	if p == "" {
		return "/"
	}
	return p
}
