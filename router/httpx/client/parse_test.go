package client

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"reflect"
	"testing"
)

// responseSeeds are heads parseCommon must take, and heads it must leave
// to http.ReadResponse (malformed, smuggling attempts, other framings).
var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nNEXT",
	"HTTP/1.1 404 Not Found\r\ncontent-length: 3\r\nx-multi: a\r\nX-Multi: b\r\n\r\nno!tail",
	"HTTP/1.1 200\r\nContent-Length: 2\r\nX-Empty:\r\nX-Pad: \t v \t\r\n\r\nok",
	"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Length: 1\r\n\r\nx",
	"HTTP/1.1 200 OK\r\nContent-Length: 007\r\n\r\n1234567",
	"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	"HTTP/1.1 200 OK\r\nX-Weird-Name_1: \x80\xff\r\nContent-Length: 1\r\n\r\nz",
	// Left to net/http.
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n0\r\nX-T: 1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\n Content-Length: 5\r\n\r\nhello",
	"HTTP/1.1 200 OK\r\nX-Fold: a\r\n b\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200 OK\r\nX-Bad: a\x00b\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200 OK\r\nX-Bad: a\rb\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200 OK\nContent-Length: 1\n\nz",
	"HTTP/1.1 200 OK\r\nContent-Length: 1\n\r\nz",
	"HTTP/1.1 2000 OK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 20 OK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\n",
	"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200 OK\r\nPragma: no-cache\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200 OK\r\n\r\nuntil close",
	"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
	"HTTP/2.0 200 OK\r\nContent-Length: 1\r\n\r\nz",
	"http/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1  200 OK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200\tOK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 200 O\x7fK\r\nContent-Length: 1\r\n\r\nz",
	"HTTP/1.1 \r\n0\r\n\r\n", // found by the fuzzer: a short status line
}

// checkResponseParse runs parseCommon on data and, when it takes the
// head, http.ReadResponse too: both must agree on everything the proxy
// uses (status, headers, framing) and leave the same bytes unread.
func checkResponseParse(t *testing.T, data []byte, method string) (taken bool) {
	t.Helper()
	req := &http.Request{Method: method}
	c := &pooledConn{br: bufio.NewReaderSize(bytes.NewReader(data), 16<<10)}
	if _, err := c.br.Peek(1); err != nil {
		return false
	}
	got := c.parseCommon(req)
	if got == nil {
		return false
	}
	stdBR := bufio.NewReaderSize(bytes.NewReader(data), 16<<10)
	want, err := http.ReadResponse(stdBR, req)
	if err != nil {
		t.Fatalf("parseCommon took a head http.ReadResponse refuses (%v): %q", err, data)
	}
	if got.Status != want.Status || got.StatusCode != want.StatusCode || got.Proto != want.Proto ||
		got.ProtoMajor != want.ProtoMajor || got.ProtoMinor != want.ProtoMinor ||
		got.ContentLength != want.ContentLength || got.Close != want.Close ||
		!reflect.DeepEqual(got.Header, want.Header) || want.TransferEncoding != nil || want.Trailer != nil {
		t.Fatalf("parseCommon and http.ReadResponse differ on %q:\n got  %d %q %q cl=%d close=%v %v\n want %d %q %q cl=%d close=%v %v te=%v trailer=%v",
			data, got.StatusCode, got.Status, got.Proto, got.ContentLength, got.Close, got.Header,
			want.StatusCode, want.Status, want.Proto, want.ContentLength, want.Close, want.Header, want.TransferEncoding, want.Trailer)
	}
	gotBody, gotErr := io.ReadAll(got.Body)
	wantBody, wantErr := io.ReadAll(want.Body)
	if !bytes.Equal(gotBody, wantBody) || (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("bodies differ on %q: %q %v against %q %v", data, gotBody, gotErr, wantBody, wantErr)
	}
	gotRest, _ := io.ReadAll(c.br)
	wantRest, _ := io.ReadAll(stdBR)
	if !bytes.Equal(gotRest, wantRest) {
		t.Fatalf("framing differs on %q: left %q against %q", data, gotRest, wantRest)
	}
	return true
}

func TestResponseParseSeeds(t *testing.T) {
	took := 0
	for i, s := range responseSeeds {
		if checkResponseParse(t, []byte(s), http.MethodGet) {
			took++
			if i >= 8 {
				t.Errorf("parseCommon took a head it must leave to net/http: %q", s)
			}
		} else if i < 8 {
			t.Errorf("parseCommon left a common head to net/http: %q", s)
		}
		if checkResponseParse(t, []byte(s), http.MethodHead) {
			t.Errorf("parseCommon took the answer to a HEAD: %q", s)
		}
	}
	if took != 8 {
		t.Fatalf("parseCommon took %d seed heads, want 8", took)
	}
}

// FuzzResponseParse compares parseCommon with http.ReadResponse: whatever
// head parseCommon takes, net/http must accept and read the same way.
func FuzzResponseParse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkResponseParse(t, data, http.MethodGet)
	})
}

// The common head costs a handful of allocations: the head string, the
// header map and its value slab, the response.
func TestResponseParseAllocations(t *testing.T) {
	data := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: Mon, 30 Nov 2026 08:00:00 GMT\r\nContent-Length: 5\r\n\r\nhello")
	rd := bytes.NewReader(data)
	c := &pooledConn{br: bufio.NewReaderSize(rd, 16<<10)}
	req := &http.Request{Method: http.MethodGet}
	allocs := testing.AllocsPerRun(100, func() {
		rd.Reset(data)
		c.br.Reset(rd)
		c.br.Peek(1)
		if c.parseCommon(req) == nil {
			t.Fatal("common head left to net/http")
		}
	})
	if allocs > 5 {
		t.Fatalf("%.0f allocations per common head, want at most 5", allocs)
	}
	t.Logf("%.0f allocations per head", allocs)
}
