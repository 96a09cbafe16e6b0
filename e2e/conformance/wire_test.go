package conformance

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// This file is the suite's own HTTP/1.1 message reader, used on both sides:
// by the raw backend to find where each request Levee sent ends, and by the
// raw client to split what Levee answered into responses. It is strict on
// purpose (CRLF line ends, no obs-fold, one framing) and reports what it
// saw rather than repairing it, so that an assertion can name the bytes.

// field is one header field line as received, in order.
type field struct{ name, value string }

// message is one HTTP/1.1 request or response as it was read.
type message struct {
	start    string  // request line or status line, without CRLF
	fields   []field // header fields, in order
	head     string  // raw head: start line to the blank line, inclusive
	body     []byte  // decoded body (chunks joined)
	trailers []field // trailer fields of a chunked body
	framing  string  // "none", "length N", "chunked", "close"

	// Request line parts (requests only).
	method, target, proto string
	// Status (responses only).
	status int
}

// get returns the values of every field named name (case-insensitive).
func (m *message) get(name string) []string {
	var out []string
	for _, f := range m.fields {
		if strings.EqualFold(f.name, name) {
			out = append(out, f.value)
		}
	}
	return out
}

// header returns the single value of name, "" when absent, and the values
// joined with ", " when repeated.
func (m *message) header(name string) string { return strings.Join(m.get(name), ", ") }

func (m *message) has(name string) bool { return len(m.get(name)) > 0 }

// trailer returns the trailer field name.
func (m *message) trailer(name string) string {
	var out []string
	for _, f := range m.trailers {
		if strings.EqualFold(f.name, name) {
			out = append(out, f.value)
		}
	}
	return strings.Join(out, ", ")
}

// line is "METHOD target" of a request, the way vectors list what a
// backend must receive.
func (m *message) line() string { return m.method + " " + m.target }

const maxHead = 1 << 20

var (
	// errEnded: the connection ended (EOF, reset, deadline) before the
	// first byte of a message. The underlying error is wrapped too.
	errEnded = errors.New("connection ended before a message")
	// errIncomplete: it ended inside a message.
	errIncomplete = errors.New("connection ended inside a message")
)

// readHead reads a start line and header fields up to the blank line.
func readHead(br *bufio.Reader, m *message) error {
	var head strings.Builder
	for first := true; ; first = false {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			if head.Len() == 0 {
				return fmt.Errorf("%w: %w", errEnded, err)
			}
			return fmt.Errorf("%w (head so far %q): %w", errIncomplete, head.String(), err)
		}
		if head.Len() > maxHead {
			return fmt.Errorf("head over %d bytes", maxHead)
		}
		if !strings.HasSuffix(line, "\r\n") {
			return fmt.Errorf("line without CRLF: %q", line)
		}
		line = strings.TrimSuffix(line, "\r\n")
		if first {
			m.start = line
			continue
		}
		if line == "" {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return fmt.Errorf("obs-fold continuation line %q", line)
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			return fmt.Errorf("malformed field line %q", line)
		}
		m.fields = append(m.fields, field{name, strings.Trim(value, " \t")})
	}
	m.head = head.String()
	return nil
}

// readRequest reads one request. With getBodiesAreRequests a GET's
// Content-Length is ignored, as Python's http.server does: what follows the
// head is read as the next request.
func readRequest(br *bufio.Reader, getBodiesAreRequests bool) (*message, error) {
	m := &message{}
	if err := readHead(br, m); err != nil {
		return nil, err
	}
	parts := strings.Split(m.start, " ")
	if len(parts) != 3 {
		return m, fmt.Errorf("malformed request line %q", m.start)
	}
	m.method, m.target, m.proto = parts[0], parts[1], parts[2]
	if getBodiesAreRequests && m.method == "GET" {
		m.framing = "none"
		return m, nil
	}
	return m, readBody(br, m, false)
}

// readResponse reads one response to a request of the given method.
func readResponse(br *bufio.Reader, method string) (*message, error) {
	m := &message{}
	if err := readHead(br, m); err != nil {
		return nil, err
	}
	proto, rest, _ := strings.Cut(m.start, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || len(code) != 3 || err != nil {
		return m, fmt.Errorf("malformed status line %q", m.start)
	}
	m.status, m.proto = status, proto
	if status/100 == 1 || status == 204 || status == 304 || method == "HEAD" {
		m.framing = "none"
		return m, nil
	}
	return m, readBody(br, m, true)
}

// readBody reads the body framed by m's fields.
func readBody(br *bufio.Reader, m *message, closeDelimited bool) error {
	te, cls := m.get("Transfer-Encoding"), m.get("Content-Length")
	switch {
	case len(te) > 0:
		codings := strings.Split(strings.Join(te, ","), ",")
		if !strings.EqualFold(strings.TrimSpace(codings[len(codings)-1]), "chunked") {
			return fmt.Errorf("transfer-encoding %q does not end in chunked", te)
		}
		m.framing = "chunked"
		return readChunked(br, m)
	case len(cls) > 0:
		for _, v := range cls[1:] {
			if v != cls[0] {
				return fmt.Errorf("conflicting Content-Length %q", cls)
			}
		}
		n, err := strconv.ParseUint(cls[0], 10, 40)
		if err != nil || strings.TrimLeft(cls[0], "0123456789") != "" {
			return fmt.Errorf("malformed Content-Length %q", cls[0])
		}
		m.framing = "length " + cls[0]
		m.body = make([]byte, n)
		got, err := io.ReadFull(br, m.body)
		if err != nil {
			m.body = m.body[:got]
			return fmt.Errorf("%w: body cut at %d of %d bytes: %w", errIncomplete, got, n, err)
		}
		return nil
	case closeDelimited:
		m.framing = "close"
		b, err := io.ReadAll(br)
		m.body = b
		return err
	default:
		m.framing = "none"
		return nil
	}
}

func readChunked(br *bufio.Reader, m *message) error {
	var body bytes.Buffer
	defer func() { m.body = body.Bytes() }()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%w: chunk size line %q: %w", errIncomplete, line, err)
		}
		if !strings.HasSuffix(line, "\r\n") {
			return fmt.Errorf("chunk size line without CRLF: %q", line)
		}
		size, _, _ := strings.Cut(strings.TrimSuffix(line, "\r\n"), ";")
		n, err := strconv.ParseUint(size, 16, 40)
		if err != nil {
			return fmt.Errorf("malformed chunk size line %q", line)
		}
		if n == 0 {
			break
		}
		if _, err := io.CopyN(&body, br, int64(n)); err != nil {
			return fmt.Errorf("%w: chunk cut short: %w", errIncomplete, err)
		}
		var crlf [2]byte
		if _, err := io.ReadFull(br, crlf[:]); err != nil || string(crlf[:]) != "\r\n" {
			return fmt.Errorf("chunk not followed by CRLF (%q, %v)", crlf, err)
		}
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("%w: trailer section: %w", errIncomplete, err)
		}
		if !strings.HasSuffix(line, "\r\n") {
			return fmt.Errorf("trailer line without CRLF: %q", line)
		}
		line = strings.TrimSuffix(line, "\r\n")
		if line == "" {
			return nil
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return fmt.Errorf("malformed trailer line %q", line)
		}
		m.trailers = append(m.trailers, field{name, strings.Trim(value, " \t")})
	}
}
