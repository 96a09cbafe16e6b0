package client

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/levee-proxy/levee/router/httpx/tokens"
)

// readResponse reads the status line and headers, skipping 1xx answers
// other than 101.
func (c *pooledConn) readResponse(req *http.Request) (*http.Response, error) {
	if _, err := c.br.Peek(1); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // what http.ReadResponse says
		}
		return nil, err
	}
	if resp := c.parseCommon(req); resp != nil {
		return resp, nil
	}
	for interim := 0; ; interim++ {
		named := connectionNamed(c.br)
		resp, err := http.ReadResponse(c.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			// Interim answers are passed on (RFC 9110 15.2), a bounded
			// number of them, as net/http's Transport bounds them.
			if interim >= maxInterimResponses {
				return nil, errTooManyInterim
			}
			if c.inf != nil {
				removeNamed(resp.Header, named)
				c.inf.Informational(resp.StatusCode, resp.Header)
			}
			continue
		}
		if interim > 0 || req.Method == http.MethodHead ||
			resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusNotModified {
			c.suspect = true
		}
		if len(resp.Header["Connection"]) == 0 {
			// net/http deletes a Connection header that says "close" but
			// leaves the headers it names; a proxy must not pass those on
			// (RFC 9110 7.6.1).
			removeNamed(resp.Header, named)
		}
		return resp, nil
	}
}

// maxInterimResponses bounds the 1xx answers read before the final one.
const maxInterimResponses = 5

var errTooManyInterim = errors.New("backend sent too many interim (1xx) responses")

func removeNamed(h http.Header, named []string) {
	for _, k := range named {
		delete(h, k)
	}
}

// connectionNamed returns the header names listed in the Connection header
// of the response head buffered in br (tokens.AppendConnectionNamed),
// reading nothing.
func connectionNamed(br *bufio.Reader) []string {
	buf, _ := br.Peek(br.Buffered())
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		return nil
	}
	var names []string
	for _, line := range bytes.Split(buf[:end], []byte("\r\n")) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || !bytes.EqualFold(bytes.TrimSpace(k), []byte("Connection")) {
			continue
		}
		names = tokens.AppendConnectionNamed(names, string(v))
	}
	return names
}

// parseCommon parses the most common response head in place, with fewer
// allocations than http.ReadResponse (one string for the whole head, keys
// and values sliced from it; docs/performance-history.md, "Common response heads
// parsed in place"): an HTTP/1.1 final status other than 204 and 304, to a
// request other than HEAD, with one Content-Length and no
// Transfer-Encoding, Trailer, Connection or Pragma header, entirely
// buffered already. It accepts only heads that http.ReadResponse accepts
// and reads the same way (FuzzResponseParse checks it); anything else,
// including anything malformed, is left unread for http.ReadResponse,
// whose verdict then stands. It returns nil when it leaves the head.
func (c *pooledConn) parseCommon(req *http.Request) *http.Response {
	if req.Method == http.MethodHead {
		return nil
	}
	buf, _ := c.br.Peek(c.br.Buffered())
	end := bytes.Index(buf, crlf2)
	if end < 0 || end < len("HTTP/1.1 200") {
		return nil
	}
	raw := buf[:end+2] // every line with its CRLF
	eol := bytes.Index(raw, crlf)
	code, ok := commonStatus(raw[:eol])
	if !ok {
		return nil
	}
	// Validate and count the header lines before allocating anything.
	lines, cl, ok := scanCommonFields(raw[eol+2:])
	if !ok {
		return nil
	}
	// One string holds the whole head; the header values are slices of
	// it, and so are the keys already in canonical form (most are).
	head := string(raw)
	h := commonHeader(head[eol+2:], lines)
	_, _ = c.br.Discard(end + 4)
	resp := &http.Response{
		Status: head[9:eol], StatusCode: code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, ContentLength: cl, Request: req, Body: http.NoBody,
	}
	if cl > 0 {
		c.fixed = fixedBody{r: c.br, n: cl}
		resp.Body = &c.fixed
	}
	return resp
}

// commonStatus reads an HTTP/1.1 status line with a final status other
// than 204 and 304 (those have no body by rule: net/http's reading).
func commonStatus(line []byte) (code int, ok bool) {
	if len(line) < len("HTTP/1.1 200") || !bytes.HasPrefix(line, http11) || !isDigit(line[9]) || !isDigit(line[10]) || !isDigit(line[11]) {
		return 0, false
	}
	code = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if code < 200 || code > 599 || code == http.StatusNoContent || code == http.StatusNotModified {
		return 0, false
	}
	if len(line) > 12 && line[12] != ' ' {
		return 0, false
	}
	for _, b := range line[12:] {
		if !validValueByte(b) {
			return 0, false
		}
	}
	return code, true
}

// scanCommonFields checks the header lines (each with its CRLF): token
// names, visible values, exactly one Content-Length of digits, and none of
// the fields whose rules are net/http's to apply (framing, connection,
// cache). It counts the lines and returns the length.
func scanCommonFields(fields []byte) (lines int, cl int64, ok bool) {
	cl = -1
	for rest := fields; len(rest) > 0; lines++ {
		// A bare LF ends no line: it is refused.
		i := bytes.IndexByte(rest, '\n') - 1
		if i < 0 || rest[i] != '\r' {
			return 0, 0, false
		}
		hl := rest[:i]
		rest = rest[i+2:]
		colon := bytes.IndexByte(hl, ':')
		if colon <= 0 {
			return 0, 0, false
		}
		for _, b := range hl[:colon] {
			if !validKeyByte(b) {
				return 0, 0, false
			}
		}
		v := trimOWS(hl[colon+1:])
		for _, b := range v {
			if !validValueByte(b) {
				return 0, 0, false
			}
		}
		switch k := hl[:colon]; {
		case asciiEqualFold(k, "Content-Length"):
			if cl >= 0 || len(v) == 0 || len(v) > 18 {
				return 0, 0, false
			}
			cl = 0
			for _, b := range v {
				if !isDigit(b) {
					return 0, 0, false
				}
				cl = cl*10 + int64(b-'0')
			}
		case asciiEqualFold(k, "Transfer-Encoding"), asciiEqualFold(k, "Trailer"),
			asciiEqualFold(k, "Connection"), asciiEqualFold(k, "Pragma"):
			return 0, 0, false
		}
	}
	return lines, cl, cl >= 0
}

// commonHeader builds the header of checked field lines, its values (and
// its keys already in canonical form) sliced from fields.
func commonHeader(fields string, lines int) http.Header {
	h := make(http.Header, lines)
	slab := make([]string, lines)
	for rest := fields; len(rest) > 0; {
		// Checked lines: every LF ends one, after its CR.
		i := strings.IndexByte(rest, '\n') - 1
		hl := rest[:i]
		rest = rest[i+2:]
		colon := strings.IndexByte(hl, ':')
		k := hl[:colon]
		if !isCanonicalKey(k) {
			k = http.CanonicalHeaderKey(k)
		}
		slab[0] = trimOWSString(hl[colon+1:])
		vv := h[k]
		if vv == nil {
			h[k] = slab[:1:1]
		} else {
			h[k] = append(vv, slab[0])
		}
		slab = slab[1:]
	}
	return h
}

var (
	crlf   = []byte("\r\n")
	crlf2  = []byte("\r\n\r\n")
	http11 = []byte("HTTP/1.1 ")
)

func isDigit(b byte) bool { return '0' <= b && b <= '9' }

// validValueByte is RFC 9110's field-vchar, SP, HTAB or obs-text: what
// net/textproto accepts in a header value.
func validValueByte(b byte) bool {
	return b == '\t' || b >= 0x20 && b != 0x7f
}

// validKeyByte is an RFC 9110 token character.
func validKeyByte(b byte) bool { return keyBytes[b] }

// keyBytes holds RFC 9110's tchar: a table, since a name's bytes are
// looked at one by one on every response.
var keyBytes = func() (t [256]bool) {
	for b := range 256 {
		c := byte(b)
		t[b] = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
	}
	return t
}()

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// trimOWSString is trimOWS for a string.
func trimOWSString(v string) string {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t') {
		v = v[:len(v)-1]
	}
	return v
}

// asciiEqualFold compares a token with a canonical header name.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != s[i]|0x20 {
			return false
		}
	}
	return true
}

// isCanonicalKey reports whether a token is in http.CanonicalHeaderKey's
// form already.
func isCanonicalKey(k string) bool {
	upper := true
	for i := 0; i < len(k); i++ {
		b := k[i]
		switch {
		case upper && 'a' <= b && b <= 'z', !upper && 'A' <= b && b <= 'Z':
			return false
		}
		upper = b == '-'
	}
	return true
}

// fixedBody is a body of known length read from the connection's reader;
// it reads like net/http's: io.EOF with the last byte, and
// io.ErrUnexpectedEOF when the connection ends short.
type fixedBody struct {
	r *bufio.Reader
	n int64
}

func (b *fixedBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := b.r.Read(p)
	b.n -= int64(n)
	if b.n == 0 {
		return n, io.EOF
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *fixedBody) Close() error { return nil }

// body is a response body that returns its connection to the pool once
// read to the end.
type body struct {
	c          *pooledConn
	body       io.ReadCloser
	bodyDone   chan error
	closeAfter bool
	done       bool
	eof        bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.done {
		return 0, net.ErrClosed
	}
	// Every read that may wait for the backend has the idle limit; a body
	// already buffered whole costs no deadline.
	if !b.buffered() {
		var deadline time.Time
		if t := b.c.t.bodyTimeout; t > 0 {
			deadline = time.Now().Add(t)
		}
		b.c.pollDeadline = time.Time{}
		_ = b.c.conn.SetReadDeadline(deadline)
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof = true
	} else if err != nil {
		b.c.broken.Store(true)
	}
	return n, err
}

// buffered reports whether the rest of the body is in the reader's buffer.
func (b *body) buffered() bool {
	c := b.c
	return b.body == &c.fixed && c.fixed.n <= int64(c.br.Buffered())
}

func (b *body) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	c := b.c
	stopped := c.disarm()
	if b.bodyDone != nil {
		select {
		case err := <-b.bodyDone:
			if err != nil {
				c.broken.Store(true)
			}
		default:
			// The backend answered before taking the whole request body.
			// The writer may be blocked on the client: do not wait for it;
			// the broken connection makes it stop.
			c.broken.Store(true)
			_ = c.conn.Close()
		}
	}
	if !b.eof || b.closeAfter || !stopped {
		c.broken.Store(true)
	}
	c.t.put(c)
	return nil
}

// upgraded is the connection after a 101: reads first drain what the
// response reader had buffered.
type upgraded struct {
	*bufio.Reader
	conn net.Conn
}

func (u *upgraded) Write(p []byte) (int, error) { return u.conn.Write(p) }
func (u *upgraded) Close() error                { return u.conn.Close() }
