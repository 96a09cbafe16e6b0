package compress

import (
	"net/http"
	"strconv"
	"strings"
)

// state is where a writer is in its decision.
type state uint8

const (
	undecided state = iota // no header written yet
	holding                // header held back, body buffered up to min
	compressing
	passing // sent as it is
)

// writer is the ResponseWriter that compresses one response.
type writer struct {
	w      http.ResponseWriter
	p      *Policy
	enc    string // the negotiated encoding, "" for none
	st     state
	status int
	e      encoder
	held   []byte
}

func (c *writer) Header() http.Header { return c.w.Header() }

// Unwrap is for http.ResponseController.
func (c *writer) Unwrap() http.ResponseWriter { return c.w }

// WriteHeader decides, from the response's header, whether the body is
// compressed.
func (c *writer) WriteHeader(status int) {
	if c.st != undecided {
		return
	}
	if status < 200 {
		c.w.WriteHeader(status) // 1xx, including 101 once hijacked
		return
	}
	c.status = status
	h := c.w.Header()
	if !c.eligible(status, h) {
		c.pass()
		return
	}
	if !varies(h) {
		h["Vary"] = append(h["Vary"], "Accept-Encoding")
	}
	if c.enc == "" {
		c.pass()
		return
	}
	if cl := h.Get("Content-Length"); cl != "" {
		n, err := strconv.ParseInt(cl, 10, 64)
		if err != nil || n == 0 || n < int64(c.p.min) {
			c.pass()
			return
		}
		c.start()
		return
	}
	if c.p.min > 0 {
		c.st = holding
		return
	}
	c.start()
}

// eligible applies the rules that do not depend on the body's length.
func (c *writer) eligible(status int, h http.Header) bool {
	switch {
	case status == http.StatusNoContent, status == http.StatusNotModified, status == http.StatusPartialContent:
		return false
	case h.Get("Content-Range") != "":
		return false
	case h.Get("Content-Encoding") != "" && !strings.EqualFold(h.Get("Content-Encoding"), "identity"):
		return false
	case c.p.skipType(h.Get("Content-Type")):
		return false
	}
	for _, cc := range h["Cache-Control"] {
		if strings.Contains(strings.ToLower(cc), "no-transform") {
			return false
		}
	}
	return true
}

// pass sends the header as it is; the body follows untouched.
func (c *writer) pass() {
	c.st = passing
	c.w.WriteHeader(c.status)
}

// start sends the compressed response's header and readies the encoder;
// without one (the pool is exhausted) the response passes.
func (c *writer) start() {
	e := c.p.pools[c.enc].get(c.w)
	if e == nil {
		c.pass()
		return
	}
	c.e = e
	h := c.w.Header()
	delete(h, "Content-Length")
	delete(h, "Accept-Ranges")
	h["Content-Encoding"] = []string{c.enc}
	if et := h.Get("Etag"); et != "" && !strings.HasPrefix(et, "W/") {
		h["Etag"] = []string{"W/" + et}
	}
	c.st = compressing
	c.w.WriteHeader(c.status)
}

func (c *writer) Write(b []byte) (int, error) {
	if c.st == undecided {
		c.WriteHeader(http.StatusOK)
	}
	switch c.st {
	case compressing:
		return c.e.Write(b)
	case holding:
		if len(c.held)+len(b) < c.p.min {
			c.held = append(c.held, b...)
			return len(b), nil
		}
		if err := c.commit(); err != nil {
			return 0, err
		}
		return c.Write(b)
	}
	return c.w.Write(b)
}

// commit ends holding: the body reached the minimum, or is flushed.
func (c *writer) commit() error {
	c.start()
	held := c.held
	c.held = nil
	if len(held) == 0 {
		return nil
	}
	_, err := c.Write(held)
	return err
}

// Flush pushes what the encoder holds to the client: a flushed body is a
// stream, so one still held back is committed to compression.
func (c *writer) Flush() {
	switch c.st {
	case undecided:
		c.WriteHeader(http.StatusOK)
		c.Flush()
		return
	case holding:
		if c.commit() != nil {
			return
		}
	}
	if c.st == compressing {
		if c.e.Flush() != nil {
			return
		}
	}
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}

// finish ends the response after the handler returned: a held body that
// never reached the minimum goes out as it is, with its length; a
// compressed one gets the end of its stream.
func (c *writer) finish() {
	switch c.st {
	case holding:
		c.w.Header()["Content-Length"] = []string{strconv.Itoa(len(c.held))}
		c.st = passing
		c.w.WriteHeader(c.status)
		_, _ = c.w.Write(c.held)
		c.held = nil
	case compressing:
		_ = c.e.Close()
		c.release()
	}
}

// release returns the encoder to the pool.
func (c *writer) release() {
	if c.e != nil {
		c.p.pools[c.enc].put(c.e)
		c.e = nil
	}
}

// varies reports whether Vary names Accept-Encoding already.
func varies(h http.Header) bool {
	for _, v := range h["Vary"] {
		for name := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(name), "Accept-Encoding") {
				return true
			}
		}
	}
	return false
}
