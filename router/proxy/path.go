package proxy

import (
	"net/url"
	"strings"
)

// cleanPath reports whether u's path is safe to route on: no dot segments
// ("/a/../b", also percent-encoded, which u.Path has decoded), no
// backslash (some servers read it as a slash) and no encoded slash.
// Matching such a path would pick the route by a prefix the backend may
// resolve away (RFC 3986 5.2.4), or by segments the backend splits
// differently.
func cleanPath(u *url.URL) bool {
	p := u.Path
	if strings.Contains(p, "/.") {
		for seg := range strings.SplitSeq(p, "/") {
			if seg == "." || seg == ".." {
				return false
			}
		}
	}
	if strings.IndexByte(p, '\\') >= 0 {
		return false
	}
	// RawPath is set only when the client's encoding differs from the
	// default, as it does for an encoded slash.
	if raw := u.RawPath; raw != "" && (strings.Contains(raw, "%2f") || strings.Contains(raw, "%2F")) {
		return false
	}
	return true
}
