package errorpages

import (
	"net/http"

	"github.com/levee-proxy/levee/breaker"
)

// catcher is the writer the exchange answers through: it lets an answer
// whose status is not listed through, and holds back one that is.
type catcher struct {
	http.ResponseWriter
	statuses breaker.StatusSet
	base     http.Header // the header before the exchange (HSTS, …)
	decided  bool
	discard  bool  // a caught body is dropped, never replayed
	caught   *held // the held answer; nil while passing through
}

// held is the original answer, kept to be replayed if the page fails.
type held struct {
	status int
	base   http.Header
	header http.Header
	body   []byte
	over   bool // the body went past MaxHeldBytes and was dropped
}

func (c *catcher) WriteHeader(code int) {
	if c.decided {
		if c.caught == nil {
			c.ResponseWriter.WriteHeader(code)
		}
		return
	}
	if code < 200 || !c.statuses.Has(code) {
		// Informational heads pass: the final head is still to come.
		c.decided = code >= 200
		c.ResponseWriter.WriteHeader(code)
		return
	}
	c.decided = true
	c.caught = &held{status: code, base: c.base, header: c.ResponseWriter.Header().Clone()}
}

func (c *catcher) Write(b []byte) (int, error) {
	if !c.decided {
		c.WriteHeader(http.StatusOK)
	}
	if h := c.caught; h != nil {
		if c.discard {
			return len(b), nil
		}
		if !h.over && len(h.body)+len(b) <= MaxHeldBytes {
			h.body = append(h.body, b...)
		} else {
			h.over, h.body = true, nil
		}
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

// Flush passes on while the answer streams; a held answer is not sent.
func (c *catcher) Flush() {
	if !c.decided {
		c.WriteHeader(http.StatusOK)
	}
	if c.caught != nil {
		return
	}
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController (deadlines, hijacking an
// upgrade, which is never held).
func (c *catcher) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// replay sends the held answer as the exchange wrote it. A body past
// MaxHeldBytes was not kept: the answer goes without one rather than
// truncated.
func (h *held) replay(w http.ResponseWriter) {
	dst := w.Header()
	clear(dst)
	for k, v := range h.header {
		dst[k] = v
	}
	if h.over {
		delete(dst, "Content-Encoding")
		delete(dst, "Etag")
		dst["Content-Length"] = []string{"0"}
	}
	w.WriteHeader(h.status)
	if len(h.body) > 0 {
		_, _ = w.Write(h.body)
	}
}

// pageWriter receives the page, up to MaxPageBytes.
type pageWriter struct {
	header http.Header
	status int
	body   []byte
	over   bool
}

func (p *pageWriter) Header() http.Header { return p.header }

func (p *pageWriter) WriteHeader(code int) {
	if p.status == 0 && code >= 200 {
		p.status = code
	}
}

func (p *pageWriter) Write(b []byte) (int, error) {
	if p.status == 0 {
		p.status = http.StatusOK
	}
	if len(p.body)+len(b) > MaxPageBytes {
		p.over = true
		return 0, http.ErrContentLength
	}
	p.body = append(p.body, b...)
	return len(b), nil
}
