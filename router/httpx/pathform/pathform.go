// Package pathform brings a request path into its normal form: the one
// form that matching, a route's policies and the backend all see, read
// once before matching (docs/operations.md, "Request paths").
//
// Backends read paths in several ways (nginx merges slash runs, Tomcat,
// Jetty and Spring drop ";" parameters, IIS drops trailing dots and spaces
// and ignores case): the normal form is one that every such reading maps
// to itself, so no spelling reaches a backend as a path the route's
// policies did not guard. Normalize applies it to a client's request;
// Check holds a path Levee itself makes (a rewrite's output) to it. It
// knows nothing of routes.
package pathform

import (
	"net/url"
	"strings"
)

// Fault says why a request path is refused (the text of the 400 answer);
// None for none.
type Fault string

const (
	None             Fault = ""
	faultDot         Fault = "request path with a segment of only dots or spaces\n"
	faultSeparator   Fault = "request path with a backslash or an encoded / ; ? # or %\n"
	faultControl     Fault = "request path with a control character\n"
	faultQuery       Fault = "request target with a fragment or a control character in its query\n"
	faultNotNormal   Fault = "request path with an empty segment or a ; parameter (strict paths)\n"
	faultNotAbsolute Fault = "request path that is not an absolute, well-encoded path\n"
)

// Normalize brings u's path into normal form, in place, or reports why
// it cannot:
//
//   - refused: a backslash (some servers read it as a slash); an encoded
//     "/", ";" (RFC 3986 3.3 separators the backend may split on), "?",
//     "#" or "%" (a second decoding changes the path); a control
//     character; a segment of nothing but dots and spaces ("." and ".."
//     are RFC 3986 5.2.4 dot segments, Windows reads the others as empty
//     or as "." and "..");
//     a query with "#" or a control byte (a fragment is never part of a
//     request target, RFC 9112 3.2, and an HTTP/2 ":path" may carry one);
//   - rewritten: ";" parameters are removed from every segment (the
//     Servlet reading of "/admin;x/secret" is "/admin/secret"), then runs
//     of slashes are merged (nginx's merge_slashes), before the dot check,
//     so "/..;/" is refused as ".." is.
//
// With strict, a path that would be rewritten is refused instead. An
// already normal path, the usual case, costs one scan and no allocation.
func Normalize(u *url.URL, strict bool) Fault {
	if f := checkQuery(u.RawQuery); f != None {
		return f
	}
	p := u.Path
	rewrite, dots := false, false
	for i := 0; i < len(p); i++ {
		switch pathClass[p[i]] {
		case classPlain:
		case classRefused:
			// Only an encoding puts ?, # or % in a decoded path.
			if c := p[i]; c < 0x20 || c == 0x7f {
				return faultControl
			}
			return faultSeparator
		case classParam:
			rewrite = true
		case classSlash:
			if i+1 < len(p) {
				switch p[i+1] {
				case '/':
					rewrite = true
				case '.', ' ':
					dots = true
				}
			}
		}
	}
	// RawPath is set only when the client's encoding differs from the
	// default one, as it does for an encoded "/" or ";".
	if raw := u.RawPath; raw != "" && (hasEscape(raw, '2', 'f') || hasEscape(raw, '3', 'b')) {
		return faultSeparator
	}
	if rewrite {
		if strict {
			return faultNotNormal
		}
		u.Path = stripParams(p)
		if u.RawPath != "" {
			u.RawPath = stripParams(u.RawPath)
		}
		dots = true // a removed parameter may have ended a dot segment
	}
	if dots && badSegment(u.Path) {
		return faultDot
	}
	return None
}

// The classes of a byte of a decoded path.
const (
	classPlain   = iota
	classRefused // a control character, \, ?, # or %
	classParam   // ;
	classSlash   // /
)

var pathClass = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = classRefused
	}
	for _, c := range []byte{0x7f, '\\', '?', '#', '%'} {
		t[c] = classRefused
	}
	t[';'], t['/'] = classParam, classSlash
	return t
}()

// checkQuery refuses a query holding "#" or a control byte: an HTTP/1.1
// request line cannot carry them, and a backend would end the target at
// the "#".
func checkQuery(q string) Fault {
	for i := 0; i < len(q); i++ {
		if queryRefused[q[i]] {
			return faultQuery
		}
	}
	return None
}

var queryRefused = func() (t [256]bool) {
	for c := range 0x21 {
		t[c] = true
	}
	t[0x7f], t['#'] = true, true
	return t
}()

// hasEscape reports whether s holds the percent-encoding %hl, in either
// case (h is a digit, l a lower-case letter).
func hasEscape(s string, h, l byte) bool {
	for {
		i := strings.IndexByte(s, '%')
		if i < 0 || i+2 >= len(s) {
			return false
		}
		if s[i+1] == h && (s[i+2] == l || s[i+2] == l-'a'+'A') {
			return true
		}
		s = s[i+1:]
	}
}

// stripParams removes the ";" parameters of every segment of p and merges
// the runs of slashes that leaves or that p had.
func stripParams(p string) string {
	var b strings.Builder
	b.Grow(len(p))
	inParam := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			inParam = false
			if b.Len() > 0 && b.String()[b.Len()-1] == '/' {
				continue
			}
		case c == ';':
			inParam = true
		}
		if !inParam {
			b.WriteByte(c)
		}
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// badSegment reports a segment of p made only of dots and spaces: "." and
// "..", which a backend resolves away (RFC 3986 5.2.4), and the likes of
// "...", " " and ". .", which Windows reads as empty.
func badSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg != "" && strings.Trim(seg, ". ") == "" {
			return true
		}
	}
	return false
}

// Check reports why raw, a path Levee made itself (a rewrite's output, in
// its escaped form), is not a normal absolute path; None when it is. It
// holds such a path to the rules a client's path meets, and refuses
// rather than rewrites (as with strict): the operator's replacement must
// not hand the backend a path the proxy would have refused or changed.
func Check(raw string) Fault {
	path, err := url.PathUnescape(raw)
	if err != nil || !strings.HasPrefix(path, "/") {
		return faultNotAbsolute
	}
	u := url.URL{Path: path}
	if u.EscapedPath() != raw {
		u.RawPath = raw
	}
	return Normalize(&u, true)
}
