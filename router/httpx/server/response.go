package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxPending is the largest body held back to give it a Content-Length
// (net/http holds 2 KiB for the same purpose).
const maxPending = 4 << 10

// response is the http.ResponseWriter of one transaction. The head is
// serialised once, when the body's framing is known: at the first Write
// when the handler set a Content-Length, otherwise at the first Flush, when
// the held-back body exceeds maxPending (then chunked), or when the
// handler returns (then with the held-back body's length).
type response struct {
	c  *conn
	ex *transaction

	header      http.Header
	status      int
	wroteHeader bool // WriteHeader called
	committed   bool // head written to the connection's buffer
	head        bool // a HEAD request: the body is never sent
	noBody      bool // 1xx, 204, 304, HEAD
	chunked     bool
	// trailers: the handler declared trailers at WriteHeader, so the
	// body is chunked; declared: the names its Trailer field declared
	// (see trailer.go).
	trailers bool
	declared []trailerDecl
	// contentLength is the declared length, -1 when unknown.
	contentLength int64
	written       int64
	closeAfter    bool
	keepAlive10   bool
	hijacked      bool
	werr          error

	// With Expect: 100-continue, the body may be read (and the 100 sent)
	// on another goroutine than the one writing the answer; contMu orders
	// the two, and no 100 goes out once the head has.
	expectContinue bool
	contMu         sync.Mutex
	continueSent   bool
}

// Header returns the response headers; changes after the head was sent
// have no effect (but for trailers, see http.TrailerPrefix).
func (w *response) Header() http.Header { return w.header }

// WriteHeader records the status. Informational statuses (1xx but 101)
// are sent at once and may repeat.
func (w *response) WriteHeader(code int) {
	if w.hijacked || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic("server: invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		w.writeInformational(code)
		return
	}
	w.wroteHeader = true
	w.status = code
	w.noBody = w.head || code < 200 || code == http.StatusNoContent || code == http.StatusNotModified
	if cl, ok := w.header["Content-Length"]; ok {
		// A length the handler set frames the body; an invalid one is
		// dropped (the body is then framed by the server).
		n, err := strconv.ParseInt(strings.TrimSpace(firstOf(cl)), 10, 64)
		switch {
		case err != nil || n < 0 || len(cl) != 1:
			delete(w.header, "Content-Length")
		case !w.noBody:
			w.contentLength = n
		}
	}
	if v := w.header["Connection"]; len(v) > 0 && headerValuesContainsToken(v, "close") {
		w.closeAfter = true
	}
	w.noteTrailers()
}

func firstOf(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// writeInformational sends an interim answer at once, as net/http does:
// the header fields as they are, sorted, but those that frame a body (a
// 1xx has none, RFC 9110 15.2); the map is kept for the final answer (RFC
// 8297). A 100 sent here answers the client's Expect: no automatic one
// follows. Unlike net/http, nothing goes to an HTTP/1.0 client, which
// would take it for the final answer (RFC 9110 15.2: MUST NOT).
func (w *response) writeInformational(code int) {
	if w.expectContinue {
		w.contMu.Lock()
		defer w.contMu.Unlock()
	}
	if code == http.StatusContinue {
		w.continueSent = true
	}
	if w.werr != nil || !w.ex.req.ProtoAtLeast(1, 1) {
		return
	}
	bw := w.c.bw
	writeStatusLine(bw, code)
	writeSortedFields(bw, w.header, func(name string) bool {
		return name != "Content-Length" && name != "Transfer-Encoding"
	})
	bw.WriteString("\r\n")
	w.flushConn()
}

// sendContinue answers an Expect: 100-continue, unless the final answer
// has started.
func (w *response) sendContinue() {
	w.contMu.Lock()
	defer w.contMu.Unlock()
	if w.committed || w.continueSent || w.werr != nil || w.hijacked {
		return
	}
	w.continueSent = true
	w.c.bw.WriteString("HTTP/1.1 100 Continue\r\n\r\n")
	w.flushConn()
}

// Write sends body bytes (held back while their total is small and no
// length was declared).
func (w *response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.werr != nil {
		return 0, w.werr
	}
	if w.noBody {
		if w.head {
			return len(p), nil
		}
		return 0, http.ErrBodyNotAllowed
	}
	if !w.committed {
		if w.contentLength < 0 && len(w.c.pending)+len(p) <= maxPending {
			w.c.pending = append(w.c.pending, p...)
			return len(p), nil
		}
		w.commit(false)
	}
	return w.writeBody(p)
}

func (w *response) writeBody(p []byte) (int, error) {
	if w.contentLength >= 0 && w.written+int64(len(p)) > w.contentLength {
		return 0, http.ErrContentLength
	}
	if len(p) == 0 {
		return 0, nil
	}
	bw := w.c.bw
	if w.chunked {
		bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		bw.WriteString("\r\n")
	}
	n, err := bw.Write(p)
	if w.chunked && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	w.written += int64(n)
	if err != nil {
		w.fail(err)
	}
	return n, err
}

// Flush sends the head and everything written so far.
func (w *response) Flush() { _ = w.FlushError() }

// FlushError is Flush that reports a failed write (http.ResponseController).
func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(false)
	}
	if w.werr != nil {
		return w.werr
	}
	return w.flushConn()
}

func (w *response) flushConn() error {
	if err := w.c.bw.Flush(); err != nil {
		w.fail(err)
		return err
	}
	return nil
}

// fail records a failed write: the client is gone, and so is the request.
func (w *response) fail(err error) {
	if w.werr == nil {
		w.werr = err
	}
	w.closeAfter = true
	w.ex.ctx.cancel()
}

// Hijack hands the connection to the handler (http.Hijacker).
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.wroteHeader && !w.committed {
		w.commit(false)
		if err := w.flushConn(); err != nil {
			return nil, nil, err
		}
	}
	c := w.c
	c.stopWatch()
	if c.cr.hasByte {
		// The byte the background read took goes into the buffered
		// reader, where a hijacker looks for what the client already
		// sent (as net/http does).
		if _, err := c.br.Peek(c.br.Buffered() + 1); err != nil {
			return nil, nil, fmt.Errorf("server: hijack: buffering the pending byte: %w", err)
		}
	}
	if !c.state.CompareAndSwap(stateActive, stateHijacked) {
		return nil, nil, errors.New("server: connection closed by shutdown")
	}
	c.srv.removeConn(c)
	w.hijacked = true
	// The server's read deadlines end here; a write deadline the handler
	// set stays, as with net/http (one of an earlier request's does not).
	_ = c.rwc.SetReadDeadline(time.Time{})
	c.clearStaleWriteDeadline()
	return c.rwc, bufio.NewReadWriter(c.br, c.bw), nil
}

// SetReadDeadline bounds the handler's reads of the request body
// (http.ResponseController); the next request on the connection gets the
// server's deadlines again.
//
// Once the background read runs (the body is read to its end, and Done
// was asked for), no read of the handler's is left to bound, and the
// deadline is not applied: its passing would end the background read as
// if the client had left. net/http applies it, and cancels the request's
// context when it passes (TestReadDeadlineLeavesWatchAlone).
func (w *response) SetReadDeadline(t time.Time) error {
	c := w.c
	c.handlerReadDeadline.Store(true)
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	if !c.watchStarted {
		c.setReadDeadline(t)
	}
	return nil
}

// SetWriteDeadline bounds the writes of the answer
// (http.ResponseController); the next request on the connection gets the
// server's deadlines again.
//
// A deadline is moved only when the one in effect is not already within
// writeSlack of it: an earlier request's (or this one's) deadline set
// at most an eighth of the time to t, and at most a second, before t is
// kept. A write deadline thus passes at most that much early, never late,
// and a keep-alive connection whose every handler bounds its answer by
// the same timeout moves its deadline about once a second, not once a
// request (a timer change in the runtime each time).
func (w *response) SetWriteDeadline(t time.Time) error {
	c := w.c
	c.wdMu.Lock()
	defer c.wdMu.Unlock()
	c.writeStale.Store(false)
	if d := c.writeDeadline; !t.IsZero() && !d.IsZero() && !d.After(t) &&
		t.Sub(d) <= min(time.Until(t)/8, writeSlack) {
		return nil
	}
	c.writeDeadline = t
	return c.rwc.SetWriteDeadline(t)
}

// writeSlack is how much earlier than asked a write deadline may pass
// (see response.SetWriteDeadline).
const writeSlack = time.Second

// setWriteDeadline sets the server's own write deadline.
func (c *conn) setWriteDeadline(t time.Time) {
	c.wdMu.Lock()
	defer c.wdMu.Unlock()
	c.writeStale.Store(false)
	c.writeDeadline = t
	_ = c.rwc.SetWriteDeadline(t)
}

// clearStaleWriteDeadline clears a write deadline whose request ended.
func (c *conn) clearStaleWriteDeadline() {
	if !c.writeStale.Load() {
		return
	}
	c.wdMu.Lock()
	defer c.wdMu.Unlock()
	if c.writeStale.Load() {
		c.writeStale.Store(false)
		c.writeDeadline = time.Time{}
		_ = c.rwc.SetWriteDeadline(time.Time{})
	}
}

// outWriter is what the connection's buffered writer writes to: w (the
// socket), once a stale write deadline is cleared.
type outWriter struct {
	c *conn
	w io.Writer
}

func (o *outWriter) Write(p []byte) (int, error) {
	o.c.clearStaleWriteDeadline()
	return o.w.Write(p)
}

// EnableFullDuplex reports success (http.ResponseController): edge never
// closes the request body when the answer starts, so the handler may
// always read it while writing.
func (w *response) EnableFullDuplex() error { return nil }

// commit writes the head. final: the handler has returned, so a held-back
// body is all there is.
func (w *response) commit(final bool) {
	if w.expectContinue {
		w.contMu.Lock()
		defer w.contMu.Unlock()
	}
	w.committed = true
	c := w.c
	h := w.header
	delete(h, "Transfer-Encoding")
	switch {
	case w.noBody:
	case w.contentLength >= 0:
	case final && !w.trailers:
		w.contentLength = int64(len(c.pending))
		h["Content-Length"] = []string{strconv.Itoa(len(c.pending))}
	case w.ex.req.ProtoAtLeast(1, 1):
		w.chunked = true
	default:
		// HTTP/1.0 without a length: the end of the body is the end of
		// the connection.
		w.closeAfter = true
	}
	if c.srv.shutdown.Load() {
		w.closeAfter = true
	}
	bw := c.bw
	writeStatusLine(bw, w.status)
	w.writeFields()
	if _, ok := h["Date"]; !ok {
		bw.WriteString("Date: ")
		bw.WriteString(c.srv.dateHeader(time.Now())[0])
		bw.WriteString("\r\n")
	}
	if w.chunked {
		bw.WriteString("Transfer-Encoding: chunked\r\n")
	}
	switch {
	case w.closeAfter:
		if !headerValuesContainsToken(h["Connection"], "close") {
			bw.WriteString("Connection: close\r\n")
		}
	case w.keepAlive10:
		bw.WriteString("Connection: keep-alive\r\n")
	}
	if _, err := bw.WriteString("\r\n"); err != nil {
		w.fail(err)
	}
	if len(c.pending) > 0 {
		p := c.pending
		c.pending = c.pending[:0]
		if !w.noBody {
			_, _ = w.writeBody(p)
		}
	}
}

// writeFields writes the header fields but trailers (see trailer.go);
// values cannot break out of their line.
func (w *response) writeFields() {
	bw := w.c.bw
	for k, vv := range w.header {
		if !validToken(k) || strings.HasPrefix(k, http.TrailerPrefix) {
			continue
		}
		if w.declared != nil {
			if vv = w.headValues(k, vv); vv == nil {
				continue
			}
		}
		writeField(bw, k, vv)
	}
}

// writeSortedFields writes the fields of h that keep accepts, in the order
// of their names (net/http's Header.Write order, for the rare answers
// where edge matches it byte for byte), skipping invalid names.
func writeSortedFields(bw *bufio.Writer, h http.Header, keep func(name string) bool) {
	names := make([]string, 0, len(h))
	for k := range h {
		if validToken(k) && keep(k) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		writeField(bw, k, h[k])
	}
}

// writeField writes one field line per value.
func writeField(bw *bufio.Writer, name string, values []string) {
	for _, v := range values {
		if t := textproto.TrimString(v); bw.Available() >= len(name)+len(t)+4 && !hasLineBreakOrNUL(t) {
			// The common line in one copy.
			b := append(bw.AvailableBuffer(), name...)
			b = append(b, ": "...)
			b = append(b, t...)
			_, _ = bw.Write(append(b, "\r\n"...))
			continue
		}
		bw.WriteString(name)
		bw.WriteString(": ")
		writeValue(bw, v)
		bw.WriteString("\r\n")
	}
}

// writeValue writes a field value with CR, LF and NUL replaced by spaces,
// as net/http does.
func writeValue(bw *bufio.Writer, v string) {
	v = textproto.TrimString(v)
	if !hasLineBreakOrNUL(v) {
		bw.WriteString(v)
		return
	}
	b := []byte(v)
	for i, ch := range b {
		if ch == '\r' || ch == '\n' || ch == 0 {
			b[i] = ' '
		}
	}
	bw.Write(b)
}

// hasLineBreakOrNUL reports whether v holds a CR, LF or NUL.
func hasLineBreakOrNUL(v string) bool {
	for i := 0; i < len(v); i++ {
		// One comparison for nearly every byte: the three are below '\r'+1.
		if c := v[i]; c <= '\r' && (c == '\r' || c == '\n' || c == 0) {
			return true
		}
	}
	return false
}

var statusLines [600]string

func init() {
	for code := 100; code < len(statusLines); code++ {
		if text := http.StatusText(code); text != "" {
			statusLines[code] = "HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n"
		}
	}
}

func writeStatusLine(bw *bufio.Writer, code int) {
	if code < len(statusLines) && statusLines[code] != "" {
		bw.WriteString(statusLines[code])
		return
	}
	bw.WriteString("HTTP/1.1 ")
	bw.WriteString(strconv.Itoa(code))
	bw.WriteString(" status code ")
	bw.WriteString(strconv.Itoa(code))
	bw.WriteString("\r\n")
}

// finish completes the response after the handler returned.
func (w *response) finish() {
	if w.hijacked {
		return
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if !w.committed {
		w.commit(true)
	}
	if w.werr != nil {
		return
	}
	bw := w.c.bw
	switch {
	case w.chunked:
		bw.WriteString("0\r\n")
		w.writeTrailers(bw)
		bw.WriteString("\r\n")
	case w.contentLength >= 0 && w.written < w.contentLength && !w.noBody:
		// Shorter than declared: the client must not wait for the rest
		// on a connection that then carries another answer.
		w.closeAfter = true
	}
	_ = w.flushConn()
}
