package router

// Matching a request against a Snapshot: host precedence, then the longest
// path prefix, then the route's method and regex filters.

import (
	"slices"
	"strings"

	"github.com/levee-proxy/levee/router/config"
)

// accepts applies the filters that are not part of the table's index.
func (r *Route) accepts(method, path string) bool {
	if len(r.methods) > 0 && !slices.Contains(r.methods, method) {
		return false
	}
	return r.regex == nil || r.regex.MatchString(path)
}

// match returns the route of the longest matching prefix. With
// case-insensitive routes on the host, the folded path is walked too, and
// the deeper match wins (Route.before between equals), so "/ADMIN" finds
// a case-insensitive "/admin" before an open "/".
func (t *hostTable) match(method, path string, l *Listener, on listenerFilter) *Route {
	r, depth := walkPrefixes(t.byPrefix, method, path, path, l, on)
	if t.byFolded == nil {
		return r
	}
	var buf [256]byte
	fr, fdepth := walkFolded(t.byFolded, method, foldPath(buf[:0], path), l, on)
	if fr != nil && (r == nil || fdepth > depth || fdepth == depth && fr.before(r)) {
		return fr
	}
	return r
}

// walkPrefixes looks up p, then each shorter segment prefix of it down to
// "/", in m, and returns the first route that accepts the request with
// the number of segments of its prefix. path is the request's, for the
// route's filters.
func walkPrefixes(m map[string][]*Route, method, path, p string, l *Listener, on listenerFilter) (*Route, int) {
	for {
		for _, r := range m[p] {
			if r.accepts(method, path) && (on == nil || on(r, l)) {
				return r, segments(p)
			}
		}
		if p == "/" {
			return nil, 0
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			p = "/"
		} else {
			p = p[:i]
		}
	}
}

// segments counts the segments of a prefix key: 0 for "/".
func segments(p string) int {
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// lookup returns host's table (host in lower case, "*" or "*.suffix"), or
// nil.
func (s *Snapshot) lookup(host string) *hostTable {
	switch {
	case host == "*":
		return s.any
	case strings.HasPrefix(host, "*."):
		t, _ := s.wildcard.Get(host[2:])
		return t
	default:
		t, _ := s.exact.Get(host)
		return t
	}
}

// Match returns the route for a request, or nil. host may carry a port and
// any case; path is the decoded request path. It does not allocate for host
// names up to 256 bytes.
func (s *Snapshot) Match(method, host, path string) *Route {
	return s.matchWith(method, host, path, nil, nil)
}

// matchWith is Match among the routes that on accepts on l (all when on is
// nil).
func (s *Snapshot) matchWith(method, host, path string, l *Listener, on listenerFilter) *Route {
	var buf [256]byte
	return s.match(method, config.AppendRequestHost(buf[:0], host), path, l, on)
}

// match looks host up with m[string(b)] expressions, which the compiler
// performs without converting (allocating) the byte slice.
func (s *Snapshot) match(method string, host []byte, path string, l *Listener, on listenerFilter) *Route {
	if t, _ := s.exact.GetBytes(host); t != nil {
		if r := t.match(method, path, l, on); r != nil {
			return r
		}
	}
	if s.wildcard.Len() > 0 {
		// Walk the suffixes after each dot, longest first: the most
		// specific wildcard wins.
		for i := 0; i < len(host); i++ {
			if host[i] != '.' {
				continue
			}
			if t, _ := s.wildcard.GetBytes(host[i+1:]); t != nil {
				if r := t.match(method, path, l, on); r != nil {
					return r
				}
			}
		}
	}
	if s.any != nil {
		return s.any.match(method, path, l, on)
	}
	return nil
}

// Route returns the route with the given entrypoint id.
func (s *Snapshot) Route(id string) (*Route, bool) {
	return s.byID.Get(id)
}

// Routes returns every route, ghosts included, sorted by id.
func (s *Snapshot) Routes() []*Route { return slices.Clone(s.routes) }
