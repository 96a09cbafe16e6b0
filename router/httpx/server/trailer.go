package server

import (
	"bufio"
	"net/http"
	"net/textproto"
	"slices"
	"strings"
)

// Trailers, as net/http's server sends them. A handler declares them in
// one of two ways: names in the Trailer field (values set after the body),
// or http.TrailerPrefix keys ("Trailer:Name"), which may be added after
// the head went out. What counts is the header as it was at WriteHeader
// (net/http writes the head from a copy taken then): a Trailer field or a
// prefix key means a chunked body (no Content-Length is computed for it),
// and a declared name's field goes in the head only with the values it
// had then. A prefix key added only later reaches the client if the body
// is chunked anyway (flushed, or too long to hold back); otherwise it is
// dropped, as by net/http.

// trailerDecl is a name the Trailer field declared.
type trailerDecl struct {
	name string
	// head holds the field's values at WriteHeader, for the head; nil
	// when it was not set then (a trailer only).
	head []string
}

// noteTrailers records, at WriteHeader, whether the handler declared
// trailers and which names the Trailer field declared.
func (w *response) noteTrailers() {
	h := w.header
	declared := h["Trailer"]
	if len(declared) == 0 && !hasTrailerPrefixKey(h) {
		return
	}
	w.trailers = true
	for _, v := range declared {
		forEachElement(v, func(name string) {
			name = http.CanonicalHeaderKey(name)
			if !validTrailerName(name) {
				return
			}
			w.declared = append(w.declared, trailerDecl{name: name, head: h[name]})
		})
	}
}

func hasTrailerPrefixKey(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			return true
		}
	}
	return false
}

// headValues returns the values a field is written with in the head: a
// declared name's as they were at WriteHeader (nil: none), any other's
// as they are.
func (w *response) headValues(name string, vv []string) []string {
	for _, d := range w.declared {
		if d.name == name {
			return d.head
		}
	}
	return vv
}

// writeTrailers writes the trailer fields after the last chunk: the
// prefix keys', then the declared names' values appended, in name order
// (net/http's finalTrailers and Header.Write).
func (w *response) writeTrailers(bw *bufio.Writer) {
	var t http.Header
	for k, vv := range w.header {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[name] = vv
		}
	}
	for _, d := range w.declared {
		for _, v := range w.header[d.name] {
			if t == nil {
				t = make(http.Header)
			}
			t[d.name] = append(slices.Clip(t[d.name]), v)
		}
	}
	if t != nil {
		writeSortedFields(bw, t, func(string) bool { return true })
	}
}

// forEachElement calls fn for each non-empty element of a comma-separated
// field value.
func forEachElement(v string, fn func(string)) {
	for elem := range strings.SplitSeq(v, ",") {
		if elem = textproto.TrimString(elem); elem != "" {
			fn(elem)
		}
	}
}

// validTrailerName reports whether a field may be sent as a trailer (RFC
// 9110 6.5.1: not one that frames the message, routes it, authenticates
// it, or is needed to process the content); the list is net/http's
// (httpguts.ValidTrailerHeader).
func validTrailerName(name string) bool {
	return !strings.HasPrefix(name, "If-") && !badTrailer[name]
}

var badTrailer = map[string]bool{
	"Authorization":       true,
	"Cache-Control":       true,
	"Connection":          true,
	"Content-Encoding":    true,
	"Content-Length":      true,
	"Content-Range":       true,
	"Content-Type":        true,
	"Expect":              true,
	"Host":                true,
	"Keep-Alive":          true,
	"Max-Forwards":        true,
	"Pragma":              true,
	"Proxy-Authenticate":  true,
	"Proxy-Authorization": true,
	"Proxy-Connection":    true,
	"Range":               true,
	"Realm":               true,
	"Te":                  true,
	"Trailer":             true,
	"Transfer-Encoding":   true,
	"Www-Authenticate":    true,
}
