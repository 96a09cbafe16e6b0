package server

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"runtime"
	"strings"
	"time"
)

// transaction is one request on a connection and its response: everything
// the request needs, in one allocation.
type transaction struct {
	c   *conn
	req *http.Request
	url url.URL
	ctx requestContext
	// body is nil when the request has none.
	body      *body
	bodyStore body
	resp      response
	// expectFailed: an Expect other than 100-continue, answered 417.
	expectFailed bool
	// values holds the header values of a plain request (one string per
	// line), saving an allocation for all but unusually long heads.
	values [12]string
}

// statusError is a request the server refuses with a status of its own.
type statusError struct {
	code int
	text string
}

func (e *statusError) Error() string { return e.text }

// errQuiet ends a connection without an answer (it closed, or idled out,
// between requests).
var errQuiet = errors.New("server: connection ended between requests")

// readRequest reads the next request head and prepares its transaction.
func (c *conn) readRequest() (*transaction, error) {
	s := c.srv
	c.cr.limit = int64(s.maxHeaderBytes()) + 4096
	c.cr.hitLimit = false
	c.clearHandlerDeadlines()
	if c.br.Buffered() == 0 && !c.cr.hasByte {
		c.setIdleDeadline()
		// Let the other connections' work run first: by the time this
		// one reads, its next request has usually arrived, and the read
		// does not come back empty (EAGAIN) to be made again after the
		// poller: a wasted system call per request otherwise
		// (docs/performance-history.md: the yield before reading the next request).
		runtime.Gosched()
		if err := c.awaitRequest(); err != nil {
			if errors.Is(err, errPark) {
				return nil, errPark
			}
			return nil, errQuiet
		}
	}
	if !c.state.CompareAndSwap(stateIdle, stateActive) {
		return nil, errQuiet // closed by Shutdown
	}
	if c.lastMethod == http.MethodPost {
		// RFC 9112 2.2: tolerate the CRLF some old clients add after a
		// POST body, as net/http does.
		peek, _ := c.br.Peek(4)
		_, _ = c.br.Discard(leadingCRLF(peek))
	}

	head, err := c.bufferHead()
	if err != nil {
		return nil, err
	}
	ex := &transaction{c: c}
	ex.ctx = requestContext{ex: ex, base: c.base}
	ok := false
	if head != nil {
		ok = ex.parseFast(head)
	}
	if ok {
		_, _ = c.br.Discard(len(head))
	} else if err := ex.readSlow(); err != nil {
		return nil, err
	}
	c.cr.limit = -1
	c.lastMethod = ex.req.Method
	if c.respHeader == nil {
		c.respHeader = make(http.Header, 16)
	} else {
		clear(c.respHeader)
	}
	ex.resp = response{c: c, ex: ex, header: c.respHeader, contentLength: -1}
	ex.resp.expectContinue = ex.body != nil && ex.body.wantsContinue
	if ex.req.Method == http.MethodHead {
		ex.resp.head = true
	}
	// For HTTP/1.0, net/http's parser has set Close unless the client
	// asked for keep-alive.
	ex.resp.closeAfter = ex.req.Close
	ex.resp.keepAlive10 = !ex.req.Close && !ex.req.ProtoAtLeast(1, 1)
	if ex.body != nil {
		// Reading a body may take long (uploads): no deadline but the
		// client's own pace, as with net/http's ReadTimeout of zero.
		c.setReadDeadline(time.Time{})
	}
	return ex, nil
}

func leadingCRLF(b []byte) int {
	n := 0
	for _, ch := range b {
		if ch != '\r' && ch != '\n' {
			break
		}
		n++
	}
	return n
}

// bufferHead reads until the buffer holds a whole request head that the
// fast path may take, and returns it. It returns nil (and no error) when
// the head is for net/http's parser: larger than the buffer, or with a
// bare LF.
func (c *conn) bufferHead() ([]byte, error) {
	armed := false
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		end, bare := headEnd(buf)
		if end > 0 {
			return buf[:end], nil
		}
		if bare || c.br.Buffered() == c.br.Size() {
			c.armHeaderDeadline(&armed)
			return nil, nil
		}
		c.armHeaderDeadline(&armed)
		if _, err := c.br.Peek(c.br.Buffered() + 1); err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return nil, nil
			}
			if c.cr.hitLimit {
				return nil, err
			}
			if errors.Is(err, io.EOF) {
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

func (c *conn) armHeaderDeadline(armed *bool) {
	if *armed {
		return
	}
	*armed = true
	if d := c.srv.ReadHeaderTimeout; d > 0 {
		c.setReadDeadline(time.Now().Add(d))
	}
}

// idleSlack is how early an idle deadline may fire: a busy connection
// moves its deadline once per idleSlack instead of once per request.
const idleSlack = time.Second

// setIdleDeadline bounds the wait for the next request by the idle
// timeout, give or take idleSlack.
func (c *conn) setIdleDeadline() {
	d := c.srv.idleTimeout()
	if d <= 0 {
		if c.idleDeadline || !c.readDeadline.IsZero() {
			c.setReadDeadline(time.Time{})
		}
		return
	}
	now := time.Now()
	if c.idleDeadline && c.readDeadline.Sub(now) > d-min(idleSlack, d/2) {
		return
	}
	c.setReadDeadline(now.Add(d))
	c.idleDeadline = true
}

// clearHandlerDeadlines ends the deadlines the last request's handler
// set: they bounded its body and its answer, not what comes next (whose
// head may already be partly buffered, where no idle deadline is set).
// A read deadline is cleared now; a write deadline is marked stale, and
// cleared before the next write unless the next handler moves it first
// (see response.SetWriteDeadline): clearing it here would cost a timer
// change per request on a keep-alive connection whose every handler sets
// one again.
func (c *conn) clearHandlerDeadlines() {
	if c.handlerReadDeadline.Load() {
		c.handlerReadDeadline.Store(false)
		c.setReadDeadline(time.Time{})
	}
	c.wdMu.Lock()
	if !c.writeDeadline.IsZero() {
		c.writeStale.Store(true)
	}
	c.wdMu.Unlock()
}

// setReadDeadline sets the read deadline and remembers it; every deadline
// of the loop goes through it (the background read's and Hijack's reset
// the memory).
func (c *conn) setReadDeadline(t time.Time) {
	_ = c.rwc.SetReadDeadline(t)
	c.readDeadline = t
	c.idleDeadline = false
}

// headEnd returns the length of the head ending in the first empty line,
// or 0 if there is none yet. bare reports a line ending in LF alone (or an
// empty first line), which only net/http's parser may judge.
func headEnd(b []byte) (end int, bare bool) {
	start := 0
	for {
		i := bytes.IndexByte(b[start:], '\n')
		if i < 0 {
			return 0, false
		}
		i += start
		if i == 0 || b[i-1] != '\r' {
			return 0, true
		}
		if i == 1 {
			return 0, true // an empty request line
		}
		if i >= 3 && b[i-2] == '\n' {
			return i + 1, false
		}
		start = i + 1
	}
}

// parseFast parses a request head of the plain kind (see the package
// doc) and reports false, having changed nothing that matters, for any
// other head.
func (ex *transaction) parseFast(head []byte) bool {
	sp, target, pathEnd, lines, ok := plainRequestLine(head)
	if !ok {
		return false
	}
	s := string(head) // every string below is a slice of this one
	f, ok := ex.plainFields(s, len(head)-len(lines), bytes.Count(lines, []byte("\r\n"))-1)
	if !ok {
		return false
	}
	u := &ex.url
	target2 := s[sp+1 : sp+1+len(target)]
	u.Path = target2[:pathEnd]
	if pathEnd < len(target2) {
		u.RawQuery = target2[pathEnd+1:]
	}
	req := (&http.Request{}).WithContext(&ex.ctx)
	req.Method = s[:sp]
	req.URL = u
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/1.1", 1, 1
	req.Header = f.header
	req.Host = f.host
	req.RequestURI = target2
	req.RemoteAddr = ex.c.remoteAddr
	req.TLS = ex.c.tlsState
	req.Close = f.closeReq
	req.ContentLength = f.contentLength
	req.Body = http.NoBody
	if f.contentLength > 0 {
		ex.bodyStore = body{ex: ex, remain: f.contentLength}
		ex.body = &ex.bodyStore
		req.Body = ex.body
	}
	ex.req = req
	return true
}

// plainRequestLine reads a request line of the plain kind: a token method,
// an origin-form target of ordinary characters (no lone '?'), HTTP/1.1.
// It returns the method's end, the target, where its path ends, and the
// header lines that follow.
func plainRequestLine(head []byte) (sp int, target []byte, pathEnd int, lines []byte, ok bool) {
	sp = bytes.IndexByte(head, ' ')
	if sp <= 0 || !allTokens(head[:sp]) {
		return 0, nil, 0, nil, false
	}
	rest := head[sp+1:]
	sp2 := bytes.IndexByte(rest, ' ')
	if sp2 <= 0 || rest[0] != '/' {
		return 0, nil, 0, nil, false
	}
	target = rest[:sp2]
	rest = rest[sp2+1:]
	if !bytes.HasPrefix(rest, []byte("HTTP/1.1\r\n")) {
		return 0, nil, 0, nil, false
	}
	pathEnd = len(target)
	for i, ch := range target {
		if ch == '?' {
			pathEnd = i
			break
		}
		if !pathByte[ch] {
			return 0, nil, 0, nil, false
		}
	}
	if pathEnd < len(target) {
		if pathEnd == len(target)-1 {
			return 0, nil, 0, nil, false // a lone '?' (ForceQuery): rare, leave it to net/url
		}
		for _, ch := range target[pathEnd+1:] {
			if ch <= ' ' || ch >= 0x7f {
				return 0, nil, 0, nil, false
			}
		}
	}
	return sp, target, pathEnd, rest[len("HTTP/1.1\r\n"):], true
}

// plainHead is what the fields of a plain request head say.
type plainHead struct {
	header        http.Header
	host          string
	contentLength int64
	closeReq      bool
}

// plainFields reads the n header lines of s from off: token names,
// visible values, exactly one Host of ordinary characters, at most one
// Content-Length of digits, none of the fields whose rules are net/http's
// to apply. The map and its values come from one slab.
func (ex *transaction) plainFields(s string, off, n int) (f plainHead, ok bool) {
	f.header = make(http.Header, n)
	var slab []string
	if n <= len(ex.values) {
		slab = ex.values[:n]
	} else {
		slab = make([]string, n)
	}
	hosts, lengths := 0, 0
	for off < len(s)-2 {
		eol := strings.Index(s[off:], "\r\n") + off
		line := s[off:eol]
		off = eol + 2
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || !allTokenString(line[:colon]) {
			return f, false
		}
		value := line[colon+1:]
		for i := 0; i < len(value); i++ {
			if ch := value[i]; ch < ' ' && ch != '\t' || ch == 0x7f {
				return f, false
			}
		}
		value = strings.Trim(value, " \t")
		key := textproto.CanonicalMIMEHeaderKey(line[:colon])
		switch key {
		case "Host":
			hosts++
			for i := 0; i < len(value); i++ {
				if !hostByte[value[i]] {
					return f, false
				}
			}
			f.host = value
			continue
		case "Content-Length":
			lengths++
			if lengths > 1 || len(value) == 0 || len(value) > 18 {
				return f, false
			}
			for i := 0; i < len(value); i++ {
				if value[i] < '0' || value[i] > '9' {
					return f, false
				}
				f.contentLength = f.contentLength*10 + int64(value[i]-'0')
			}
		case "Transfer-Encoding", "Expect", "Pragma", "Trailer":
			return f, false
		case "Connection":
			f.closeReq = f.closeReq || headerValuesContainsToken([]string{value}, "close")
		}
		if vv := f.header[key]; vv != nil {
			f.header[key] = append(vv, value)
			continue
		}
		vv := slab[:1:1]
		slab = slab[1:]
		vv[0] = value
		f.header[key] = vv
	}
	return f, hosts == 1 && f.host != ""
}

// allTokenString reports whether name is a non-empty run of token
// characters.
func allTokenString(name string) bool {
	for i := 0; i < len(name); i++ {
		if !tokenByte[name[i]] {
			return false
		}
	}
	return true
}

// readSlow reads the request with net/http's parser and applies net/http's
// server-side checks.
func (ex *transaction) readSlow() error {
	c := ex.c
	req, err := http.ReadRequest(c.br)
	if err != nil {
		if c.cr.hitLimit {
			return &statusError{http.StatusRequestHeaderFieldsTooLarge, "request head too large"}
		}
		return err
	}
	if req.ProtoMajor != 1 {
		return &statusError{http.StatusHTTPVersionNotSupported, "unsupported protocol version"}
	}
	// http.ReadRequest has already refused more than one Host and moved
	// it to req.Host (from the target, for an absolute-form one). An
	// HTTP/1.1 request without one is refused, as by net/http's server;
	// unlike it, an empty Host is refused too (no route could match it).
	if req.ProtoAtLeast(1, 1) && req.Host == "" && req.Method != http.MethodConnect {
		return &statusError{http.StatusBadRequest, "missing required Host header"}
	}
	if !validHost(req.Host) {
		return &statusError{http.StatusBadRequest, "malformed Host header"}
	}
	for k, vv := range req.Header {
		if !validToken(k) {
			return &statusError{http.StatusBadRequest, "invalid header name"}
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				return &statusError{http.StatusBadRequest, "invalid header value"}
			}
		}
	}
	wantsContinue := false
	if expect := req.Header.Get("Expect"); expect != "" {
		if headerValuesContainsToken([]string{expect}, "100-continue") {
			wantsContinue = req.ProtoAtLeast(1, 1) && req.ContentLength != 0
			delete(req.Header, "Expect")
		} else {
			ex.expectFailed = true
		}
	}
	r := req.WithContext(&ex.ctx)
	r.RemoteAddr = c.remoteAddr
	r.TLS = c.tlsState
	if r.Body != nil && r.Body != http.NoBody {
		var src io.Reader = r.Body
		if len(r.TransferEncoding) > 0 {
			// net/http has refused every coding but chunked (and
			// ignored Transfer-Encoding on HTTP/1.0); its reader of
			// this body is left unread.
			src = &chunkedReader{br: c.br, req: r}
		}
		ex.bodyStore = body{ex: ex, src: src, remain: -1, wantsContinue: wantsContinue}
		ex.body = &ex.bodyStore
		r.Body = ex.body
	}
	ex.req = r
	return nil
}

// headerValuesContainsToken reports whether any comma-separated element of
// values is token, case-insensitively (as net/http's httpguts does).
func headerValuesContainsToken(values []string, token string) bool {
	for _, v := range values {
		for v != "" {
			var elem string
			elem, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.Trim(elem, " \t"), token) {
				return true
			}
		}
	}
	return false
}

func allTokens(b []byte) bool {
	for _, ch := range b {
		if !tokenByte[ch] {
			return false
		}
	}
	return true
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !tokenByte[s[i]] {
			return false
		}
	}
	return true
}

// validFieldValue rejects control bytes but HTAB (net/http's rule).
func validFieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if ch := s[i]; ch < ' ' && ch != '\t' || ch == 0x7f {
			return false
		}
	}
	return true
}

func validHost(s string) bool {
	for i := 0; i < len(s); i++ {
		if !hostByteSlow[s[i]] {
			return false
		}
	}
	return true
}

// Byte classes. tokenByte: RFC 9110 tchar. pathByte: what net/url keeps
// unescaped in a path (so that URL.RawPath stays empty). hostByte: the
// fast path's host characters; hostByteSlow: net/http's (httpguts).
var tokenByte, pathByte, hostByte, hostByteSlow [256]bool

func init() {
	for ch := 0; ch < 256; ch++ {
		alnum := 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9'
		tokenByte[ch] = alnum || strings.IndexByte("!#$%&'*+-.^_`|~", byte(ch)) >= 0
		pathByte[ch] = alnum || strings.IndexByte("-._~$&+,/:;=@", byte(ch)) >= 0
		hostByte[ch] = alnum || strings.IndexByte("-.:[]_", byte(ch)) >= 0
		hostByteSlow[ch] = alnum || strings.IndexByte("!$%&'()*+,-.:;=[]_~", byte(ch)) >= 0
	}
}
