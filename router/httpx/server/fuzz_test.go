package server

import (
	"bufio"
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// fastSeeds are request heads of the kinds clients send, and of the kinds
// attackers send; the fast path must agree with net/http on all it takes.
var fastSeeds = []string{
	"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /x/y?q=1&r=%20 HTTP/1.1\r\nHost: a.test:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n",
	"POST /submit HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello",
	"GET / HTTP/1.1\r\nhost: a.test\r\nx-lower: 1\r\nX-Dup: 1\r\nx-dup: 2\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: keep-alive, close\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nX-Empty:\r\nX-Spaces:   v  \t\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nX-Obs: caf\xc3\xa9\r\n\r\n",
	"GET /a;b=c/d@e HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	"OPTIONS * HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n",
	"GET / HTTP/1.0\r\nHost: a.test\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
	"POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nX-Fold: a\r\n b\r\n\r\n",
	"GET / HTTP/1.1\nHost: a.test\n\n",
	"GET / HTTP/1.1\r\nHost: a.test\n\r\n",
	"GET / HTTP/1.1\r\nHost : a.test\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nBad Name: x\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nX-Nul: a\x00b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nX-CR: a\rb\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a\x00b\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: +5\r\n\r\nhello",
	"GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 0x5\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 99999999999999999999\r\n\r\n",
	"GET /a b HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /a?b#c HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET /a? HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET //a/../b HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"G@T / HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET / HTTP/1.1 \r\nHost: a.test\r\n\r\n",
	"GET / http/1.1\r\nHost: a.test\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
	"GET / HTTP/1.1\r\nHost: a.test\r\nPragma: no-cache\r\n\r\n",
	"GET / HTTP/1.1\r\n Host: a.test\r\n\r\n",
	"\r\nGET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
	"GET / HTTP/1.1\r\nHost: a.test\r\n\r\nGET /2 HTTP/1.1\r\nHost: a.test\r\n\r\n",
}

// FuzzFastRequest is the differential test of the fast path: whatever head
// parseFast accepts, net/http's parser and server checks accept with the
// same method, target, protocol, headers, Host, length, Close and body, and
// both consume the same bytes. Seeds run with go test.
func FuzzFastRequest(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		end, bare := headEnd(in)
		if end == 0 || bare {
			return
		}
		ex := &transaction{c: &conn{remoteAddr: "192.0.2.1:1234"}}
		ex.ctx = requestContext{ex: ex}
		if !ex.parseFast(in[:end]) {
			return
		}
		got := ex.req
		br := bufio.NewReader(bytes.NewReader(in))
		want, err := http.ReadRequest(br)
		if err != nil {
			t.Fatalf("fast path took %q; net/http refuses it: %v", in, err)
		}
		if br.Buffered() != len(in)-end {
			t.Fatalf("%q: net/http's head is %d bytes, the fast path's %d", in, len(in)-br.Buffered(), end)
		}
		if want.ProtoMajor != 1 || want.Host == "" || !validHost(want.Host) {
			t.Fatalf("%q: net/http's server refuses it (proto %d, host %q)", in, want.ProtoMajor, want.Host)
		}
		for k, vv := range want.Header {
			if !validToken(k) {
				t.Fatalf("%q: net/http's server refuses header name %q", in, k)
			}
			for _, v := range vv {
				if !validFieldValue(v) {
					t.Fatalf("%q: net/http's server refuses header value %q", in, v)
				}
			}
		}
		checks := []struct {
			what      string
			got, want any
		}{
			{"method", got.Method, want.Method},
			{"request URI", got.RequestURI, want.RequestURI},
			{"URL", *got.URL, *want.URL},
			{"proto", got.Proto, want.Proto},
			{"proto minor", got.ProtoMinor, want.ProtoMinor},
			{"host", got.Host, want.Host},
			{"header", got.Header, want.Header},
			{"content length", got.ContentLength, want.ContentLength},
			{"close", got.Close, want.Close},
			{"transfer encoding", len(got.TransferEncoding), len(want.TransferEncoding)},
		}
		for _, c := range checks {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Fatalf("%q: %s: fast %#v, net/http %#v", in, c.what, c.got, c.want)
			}
		}
		if (got.Body == http.NoBody) != (want.Body == http.NoBody) {
			t.Fatalf("%q: body: fast %T, net/http %T", in, got.Body, want.Body)
		}
	})
}

// TestFastPathTakesCommonRequests pins which heads take the fast path, so
// that a change that sends everyday requests to net/http's parser (slower,
// but not wrong) is noticed.
func TestFastPathTakesCommonRequests(t *testing.T) {
	for _, tc := range []struct {
		head string
		fast bool
	}{
		{fastSeeds[0], true},
		{fastSeeds[1], true}, // a query is kept raw
		{"GET /a%20b HTTP/1.1\r\nHost: a.test\r\n\r\n", false}, // an escaped path: net/url decides
		{fastSeeds[2], true},
		{fastSeeds[3], true},
		{fastSeeds[5], true},
		{"GET /x/y?q=1 HTTP/1.1\r\nHost: a.test:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n", true},
		{"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", false},
		{"GET / HTTP/1.0\r\nHost: a.test\r\n\r\n", false},
		{"POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n", false},
		{"GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", false},
		{"GET / HTTP/1.1\r\nHost: \r\n\r\n", false},
		{"GET / HTTP/1.1\r\nHost: a.test\r\nX-Fold: a\r\n b\r\n\r\n", false},
	} {
		end, bare := headEnd([]byte(tc.head))
		if end == 0 || bare {
			if tc.fast {
				t.Errorf("%q: no head found", tc.head)
			}
			continue
		}
		ex := &transaction{c: &conn{}}
		if got := ex.parseFast([]byte(tc.head[:end])); got != tc.fast {
			t.Errorf("%q: fast path %v, want %v", tc.head, got, tc.fast)
		}
	}
}

func TestHeadEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		end  int
		bare bool
	}{
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest", len("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), false},
		{"GET / HTTP/1.1\r\nHost: a\r\n", 0, false},
		{"GET / HTTP/1.1\nHost: a\r\n\r\n", 0, true},
		{"GET / HTTP/1.1\r\nHost: a\n\n", 0, true},
		{"\r\nGET / HTTP/1.1\r\n\r\n", 0, true},
		{"", 0, false},
	} {
		end, bare := headEnd([]byte(tc.in))
		if end != tc.end || bare != tc.bare {
			t.Errorf("headEnd(%q) = %d, %v; want %d, %v", tc.in, end, bare, tc.end, tc.bare)
		}
	}
	if !strings.HasSuffix(fastSeeds[0], "\r\n\r\n") {
		t.Fatal("seed 0 is not a whole head")
	}
}
