package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/textproto"
)

// Chunked request bodies (RFC 9112 7.1) are decoded here rather than by
// the reader http.ReadRequest attaches, with net/http's rules (CRLF line
// ends only, extensions ignored, a bound on framing overhead, trailers
// merged into Request.Trailer) but one: a chunk size must be below 2^60
// (1 EiB; at most 15 significant hex digits).
//
// net/http's chunked reader accepts any size of up to 16 hex digits: on
// "ffffffffffffffff" it waits for 2^64-1 bytes that no request carries.
// RFC 9112 7.1 asks recipients to guard against overflow in chunk sizes.
// The bound is below int64's so that net/http's overhead accounting
// (16 + 2×size, in an int64) cannot overflow below it: from about 2^62 up
// it does, and net/http refuses most sizes in [2^62, 2^63) through that
// overflow while reading on for the others. Edge refuses them all at once,
// so the handler's read fails (the proxy answers 400) instead of waiting.

var (
	errChunkSizeTooLarge = errors.New("server: chunked body: chunk size of 2^60 or more")
	errChunkLineTooLong  = errors.New("server: chunked body: chunk line too long")
	errChunkMalformed    = errors.New("server: chunked body: malformed chunked encoding")
	errChunkOverhead     = errors.New("server: chunked body: too much non-data")
	errTrailerEOF        = errors.New("server: chunked body: unexpected EOF reading trailer")
	errTrailerTooLong    = errors.New("server: chunked body: trailer section larger than the buffer")
)

const (
	// maxChunkSize is the largest chunk size taken (see above).
	maxChunkSize = 1<<60 - 1
	// maxChunkLine is net/http's bound on a chunk-size line.
	maxChunkLine = 4096
	// maxChunkExcess bounds framing bytes beyond 16 per chunk plus twice
	// the data (net/http's rule against extensions used as padding).
	maxChunkExcess = 16 << 10
)

// chunkedReader decodes a chunked body from the connection's buffered
// reader and, at its end, reads the trailer section into req.Trailer.
type chunkedReader struct {
	br       *bufio.Reader
	req      *http.Request
	n        int64 // data bytes left in the current chunk
	checkEnd bool  // the CRLF after a chunk's data is still to be read
	excess   int64
	err      error
}

func (cr *chunkedReader) Read(p []byte) (n int, err error) {
	for cr.err == nil {
		if cr.checkEnd {
			if n > 0 && cr.br.Buffered() < 2 {
				break // return the data rather than wait for the CRLF
			}
			cr.readChunkEnd()
			continue
		}
		if cr.n == 0 {
			if n > 0 && !cr.lineBuffered() {
				break // return the data rather than wait for a chunk line
			}
			cr.beginChunk()
			continue
		}
		if len(p) == 0 {
			break
		}
		m, rerr := cr.br.Read(p[:min(int64(len(p)), cr.n)])
		n += m
		p = p[m:]
		cr.n -= int64(m)
		switch {
		case rerr == io.EOF:
			cr.err = io.ErrUnexpectedEOF
		case rerr != nil:
			cr.err = rerr
		case cr.n == 0:
			cr.checkEnd = true
		}
	}
	return n, cr.err
}

func (cr *chunkedReader) lineBuffered() bool {
	b, _ := cr.br.Peek(cr.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

func (cr *chunkedReader) readChunkEnd() {
	var crlf [2]byte
	if _, err := io.ReadFull(cr.br, crlf[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		cr.err = err
		return
	}
	if string(crlf[:]) != "\r\n" {
		cr.err = errChunkMalformed
		return
	}
	cr.checkEnd = false
}

// beginChunk reads a chunk-size line; the last chunk's is followed by the
// trailer section, and then the body ends.
func (cr *chunkedReader) beginChunk() {
	line, err := readChunkLine(cr.br)
	if err != nil {
		cr.err = err
		return
	}
	cr.excess += int64(len(line)) + 2 // the line's CRLF and the data's
	line = bytes.TrimRight(line, " \t")
	line, _, _ = bytes.Cut(line, []byte(";")) // extensions are ignored
	if cr.n, err = parseChunkSize(line); err != nil {
		cr.err = err
		return
	}
	cr.excess = max(cr.excess-16-2*cr.n, 0) // no overflow: cr.n <= maxChunkSize
	if cr.excess > maxChunkExcess {
		cr.err = errChunkOverhead
		return
	}
	if cr.n == 0 {
		cr.err = cr.readTrailer()
		if cr.err == nil {
			cr.err = io.EOF
		}
	}
}

// readChunkLine reads a line ending in CRLF, with no CR before it: RFC
// 9112 allows a bare LF in the head but not in chunked framing.
func readChunkLine(br *bufio.Reader) ([]byte, error) {
	p, err := br.ReadSlice('\n')
	switch {
	case err == io.EOF:
		return nil, io.ErrUnexpectedEOF
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, errChunkLineTooLong
	case err != nil:
		return nil, err
	}
	if i := bytes.IndexByte(p, '\r'); i < 0 || i != len(p)-2 {
		return nil, fmt.Errorf("%w: bare LF or stray CR in a chunk line", errChunkMalformed)
	}
	p = p[:len(p)-2]
	if len(p) >= maxChunkLine {
		return nil, errChunkLineTooLong
	}
	return p, nil
}

// parseChunkSize parses a chunk size: hex digits, at most 16 of them
// (net/http's limit), of a value up to maxChunkSize (edge's).
func parseChunkSize(v []byte) (int64, error) {
	if len(v) == 0 {
		return 0, fmt.Errorf("%w: empty chunk size", errChunkMalformed)
	}
	if len(v) > 16 {
		return 0, errChunkSizeTooLarge
	}
	var n uint64
	for _, ch := range v {
		var d byte
		switch {
		case '0' <= ch && ch <= '9':
			d = ch - '0'
		case 'a' <= ch && ch <= 'f':
			d = ch - 'a' + 10
		case 'A' <= ch && ch <= 'F':
			d = ch - 'A' + 10
		default:
			return 0, fmt.Errorf("%w: invalid byte in chunk size", errChunkMalformed)
		}
		n = n<<4 | uint64(d)
	}
	if n > maxChunkSize {
		return 0, errChunkSizeTooLarge
	}
	return int64(n), nil
}

// readTrailer reads the trailer section after the last chunk into
// req.Trailer, as net/http's body reader does: the section must end
// within the buffered reader's size.
func (cr *chunkedReader) readTrailer() error {
	buf, err := cr.br.Peek(2)
	if bytes.Equal(buf, []byte("\r\n")) {
		_, _ = cr.br.Discard(2)
		return nil
	}
	if len(buf) < 2 {
		return errTrailerEOF
	}
	if err != nil {
		return err
	}
	if !upcomingBlankLine(cr.br) {
		return errTrailerTooLong
	}
	hdr, err := textproto.NewReader(cr.br).ReadMIMEHeader()
	if err != nil {
		if err == io.EOF {
			return errTrailerEOF
		}
		return fmt.Errorf("server: chunked body: trailer: %w", err)
	}
	if cr.req.Trailer == nil {
		cr.req.Trailer = http.Header(hdr)
	} else {
		maps.Copy(cr.req.Trailer, http.Header(hdr))
	}
	return nil
}

// upcomingBlankLine reports whether the buffered reader can hold the rest
// of the section up to its empty line.
func upcomingBlankLine(br *bufio.Reader) bool {
	for size := 4; ; size++ {
		buf, err := br.Peek(size)
		if bytes.HasSuffix(buf, []byte("\r\n\r\n")) {
			return true
		}
		if err != nil {
			return false
		}
	}
}
