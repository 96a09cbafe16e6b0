package compress

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Policy is the compiled compression policy of one route.
type Policy struct {
	encodings []string // in order of preference
	pools     map[string]*pool
	min       int
	excluded  map[string]bool
}

// New compiles c over the process's encoders; nil when c is.
func New(c *config.Compress, encoders *Encoders) *Policy {
	if c == nil {
		return nil
	}
	p := &Policy{pools: map[string]*pool{}, min: c.MinResponseBodyBytes, excluded: map[string]bool{}}
	encs := c.Encodings
	if len(encs) == 0 {
		encs = config.DefaultEncodings
	}
	for _, e := range encs {
		// An encoding without a pool is one the validator dropped (W062).
		if pl, dup := encoders.pools[e], p.pools[e] != nil; pl != nil && !dup {
			p.encodings = append(p.encodings, e)
			p.pools[e] = pl
		}
	}
	for _, t := range c.ExcludedContentTypes {
		p.excluded[t] = true
	}
	return p
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return "compress" }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageCompress }

// Serve compresses the response of next when it is worth it.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.Method == http.MethodHead || r.Header.Get("Upgrade") != "" {
		next.ServeHTTP(w, r)
		return
	}
	cw := &writer{w: w, p: p, enc: p.negotiate(r.Header["Accept-Encoding"])}
	finished := false
	defer func() {
		if !finished {
			// next panicked (an aborted response): give the encoder back
			// without ending its stream on a broken response.
			cw.release()
		}
	}()
	next.ServeHTTP(cw, r)
	cw.finish()
	finished = true
}

// negotiate picks the encoding for an Accept-Encoding header (RFC 9110
// 12.5.3), or "" for none.
func (p *Policy) negotiate(values []string) string {
	best, bestQ := "", 0.0
	for _, enc := range p.encodings {
		q := acceptQ(values, enc)
		if q > bestQ {
			best, bestQ = enc, q
		}
	}
	return best
}

// acceptQ is the q-value the header gives enc: its own entry's, else the
// wildcard's, else 0. "x-gzip" is gzip (RFC 9110 8.4.1.3).
func acceptQ(values []string, enc string) float64 {
	q, wild := -1.0, -1.0
	for _, v := range values {
		for item := range strings.SplitSeq(v, ",") {
			name, params, _ := strings.Cut(item, ";")
			name = strings.TrimSpace(name)
			switch {
			case strings.EqualFold(name, enc) || enc == config.EncodingGzip && strings.EqualFold(name, "x-gzip"):
				q = max(q, qValue(params))
			case name == "*":
				wild = qValue(params)
			}
		}
	}
	switch {
	case q >= 0:
		return q
	case wild >= 0:
		return wild
	}
	return 0
}

// qValue reads "q=0.5" among an item's parameters; 1 without one, 0 for
// a malformed one (a client that cannot write a weight gets no encoding).
func qValue(params string) float64 {
	for param := range strings.SplitSeq(params, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(param), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "q") {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || f < 0 || f > 1 {
			return 0
		}
		return f
	}
	return 1
}

// compressedTypes are media types whose bodies are compressed already.
var compressedTypes = map[string]bool{
	"application/zip": true, "application/gzip": true, "application/x-gzip": true, "application/zstd": true,
	"application/x-bzip2": true, "application/x-xz": true, "application/x-7z-compressed": true,
	"application/x-rar-compressed": true, "application/vnd.rar": true, "font/woff": true, "font/woff2": true,
	"application/grpc": true,
}

// skipType reports whether a Content-Type is excluded or compressed
// already.
func (p *Policy) skipType(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "" {
		return false
	}
	if p.excluded[mt] || compressedTypes[mt] {
		return true
	}
	major, _, _ := strings.Cut(mt, "/")
	switch major {
	case "video", "audio":
		return true
	case "image":
		return mt != "image/svg+xml" && mt != "image/bmp" && mt != "image/x-icon"
	}
	return false
}
