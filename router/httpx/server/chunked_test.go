package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// bodyReport answers with what reading the request body gave: the data,
// whether the read failed, and the trailers.
var bodyReport = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	fmt.Fprintf(w, "%q failed=%v trailer=%v", b, err != nil, r.Trailer)
})

// TestChunkSizeTooLarge is a documented difference from net/http: a chunk
// size of 2^60 or more fails the body read at once (the handler answers),
// where net/http's chunked reader, which takes up to 16 hex digits, waits
// for that many bytes (for most sizes from 2^63 up). The client keeps its
// side open: the answer must not wait for it.
func TestChunkSizeTooLarge(t *testing.T) {
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.ReadAll(r.Body)
		if err == nil {
			io.WriteString(w, "read the whole body")
			return
		}
		http.Error(w, err.Error(), http.StatusBadRequest)
	})})
	for _, size := range []string{"ffffffffffffffff", "FFFFFFFFFFFFFFFF", "8000000000000000", "7000000000000000", "1000000000000000", "10000000000000000", "00000000000000001"} {
		c := dial(t, addr)
		_ = c.c.SetDeadline(time.Now().Add(3 * time.Second))
		c.send("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n" + size + "\r\nabc")
		resp, body := c.answer("POST")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "chunk size") {
			t.Errorf("chunk size %s: %d %q, want 400 and the size error", size, resp.StatusCode, body)
		}
	}
}

// TestChunkedBodyMatchesNetHTTP: edge decodes chunked request bodies
// itself; for each body, the handler must see what it sees under
// net/http's server: the data, whether the read failed, the trailers.
func TestChunkedBodyMatchesNetHTTP(t *testing.T) {
	edgeAddr := start(t, &Server{Handler: bodyReport})
	stdAddr := startStdlib(t, bodyReport)
	padded := strings.Repeat("1;"+strings.Repeat("x", 100)+"\r\na\r\n", 200) + "0\r\n\r\n"
	for _, tc := range []struct{ name, head, body string }{
		{"plain", "", "3\r\nabc\r\n0\r\n\r\n"},
		{"two chunks", "", "3\r\nabc\r\na\r\n0123456789\r\n0\r\n\r\n"},
		{"upper-case size", "", "A\r\n0123456789\r\n0\r\n\r\n"},
		{"leading zeros", "", "0000000000000003\r\nabc\r\n0\r\n\r\n"},
		{"seventeen digits", "", "00000000000000003\r\nabc\r\n0\r\n\r\n"},
		{"extension", "", "3;name=\"v\"\r\nabc\r\n0;x\r\n\r\n"},
		{"trailing whitespace", "", "3 \t\r\nabc\r\n0\r\n\r\n"},
		{"CR in data", "", "3\r\na\rc\r\n0\r\n\r\n"},
		{"trailer", "", "3\r\nabc\r\n0\r\nX-T: 1\r\nX-U: 2\r\n\r\n"},
		{"declared trailer", "Trailer: X-T\r\n", "3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"},
		{"declared, not sent", "Trailer: X-T\r\n", "3\r\nabc\r\n0\r\n\r\n"},
		{"bad trailer", "", "3\r\nabc\r\n0\r\nBad Name: 1\r\n\r\n"},
		{"trailer cut short", "", "3\r\nabc\r\n0\r\nX-T: 1\r\n"},
		{"no last chunk", "", "3\r\nabc\r\n"},
		{"cut in data", "", "5\r\nabc"},
		{"data longer than size", "", "3\r\nabcd\r\n0\r\n\r\n"},
		{"bare LF", "", "3\nabc\r\n0\r\n\r\n"},
		{"stray CR", "", "3\r\r\nabc\r\n0\r\n\r\n"},
		{"bad size", "", "zz\r\nabc\r\n0\r\n\r\n"},
		{"empty size", "", "\r\nabc\r\n0\r\n\r\n"},
		{"signed size", "", "+3\r\nabc\r\n0\r\n\r\n"},
		{"long line", "", "3;" + strings.Repeat("x", 5000) + "\r\nabc\r\n0\r\n\r\n"},
		{"padding", "", padded},
	} {
		raw := "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n" + tc.head + "\r\n" + tc.body
		want := halfClosedAnswer(t, stdAddr, raw)
		if got := halfClosedAnswer(t, edgeAddr, raw); got != want {
			t.Errorf("%s: edge's handler saw %s; net/http's %s", tc.name, got, want)
		}
	}
}

func TestParseChunkSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  error
	}{
		{"0", 0, nil},
		{"fF", 255, nil},
		{"fffffffffffffff", 1<<60 - 1, nil},
		{"0fffffffffffffff", 1<<60 - 1, nil},
		{"1000000000000000", 0, errChunkSizeTooLarge},
		{"ffffffffffffffff", 0, errChunkSizeTooLarge},
		{"00000000000000001", 0, errChunkSizeTooLarge},
		{"", 0, errChunkMalformed},
		{"1g", 0, errChunkMalformed},
		{"-1", 0, errChunkMalformed},
	} {
		n, err := parseChunkSize([]byte(tc.in))
		if n != tc.want || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
			t.Errorf("parseChunkSize(%q) = %d, %v; want %d, %v", tc.in, n, err, tc.want, tc.err)
		}
	}
}

// halfClosedAnswer sends raw, ends the client's side, and returns the
// status and body of the answer.
func halfClosedAnswer(t *testing.T, addr, raw string) string {
	t.Helper()
	c := dial(t, addr)
	c.send(raw)
	// The server may have answered and closed already (a malformed
	// body): then there is no side left to end.
	_ = c.c.(*net.TCPConn).CloseWrite()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return "no answer: " + err.Error()
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.Status + " " + string(b)
}

// FuzzChunkedBody is the differential test of chunkedReader: for any
// chunked body, it yields what net/http's body reader yields (data,
// failure, trailers, bytes consumed), but for a chunk size of 2^60 or
// more, which it refuses at once. Seeds run with go test.
func FuzzChunkedBody(f *testing.F) {
	for _, s := range []string{
		"3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n",
		"3;x=1\r\nabc\r\nA \r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n",
		"3\r\nabc\r\n0\r\nX-T: 1\r\n",
		"3\nabc\r\n0\r\n\r\n",
		"ffffffffffffffff\r\nabc",
		"7fffffffffffffff\r\nabc",
		"7000000000000000\r\n0",
		"fffffffffffffff\r\nabc",
		"00000000000000003\r\nabc\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	const head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
	f.Fuzz(func(t *testing.T, in []byte) {
		wbr := bufio.NewReaderSize(io.MultiReader(strings.NewReader(head), bytes.NewReader(in)), bufferSize)
		wreq, err := http.ReadRequest(wbr)
		if err != nil {
			t.Fatal(err)
		}
		want, werr := io.ReadAll(wreq.Body)

		gbr := bufio.NewReaderSize(bytes.NewReader(in), bufferSize)
		greq := &http.Request{}
		got, gerr := io.ReadAll(&chunkedReader{br: gbr, req: greq})
		if errors.Is(gerr, errChunkSizeTooLarge) {
			if werr == nil {
				t.Fatalf("%q: refused as too large; net/http read %q", in, want)
			}
			return
		}
		if (gerr != nil) != (werr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("%q: got %q, %v; net/http %q, %v", in, got, gerr, want, werr)
		}
		if gerr == nil && (gbr.Buffered() != wbr.Buffered() || !reflect.DeepEqual(greq.Trailer, wreq.Trailer)) {
			t.Fatalf("%q: left %d bytes, trailer %v; net/http %d, %v", in, gbr.Buffered(), greq.Trailer, wbr.Buffered(), wreq.Trailer)
		}
	})
}
