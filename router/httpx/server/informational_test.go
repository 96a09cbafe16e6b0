package server

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// readInterim reads one informational answer (1xx but 101) as raw bytes,
// or returns "" when the next answer is a final one.
func readInterim(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	peek, err := br.Peek(len("HTTP/1.1 100"))
	if err != nil {
		t.Fatalf("reading a status line: %v", err)
	}
	code, _ := strconv.Atoi(string(peek[9:]))
	if code < 100 || code > 199 || code == http.StatusSwitchingProtocols {
		return ""
	}
	var interim strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading a %d answer: %v", code, err)
		}
		interim.WriteString(line)
		if line == "\r\n" {
			return interim.String()
		}
	}
}

// earlyHints sends two informational answers, each flushed at once (it
// waits for the client to have read them, for a while), then the final
// one.
func earlyHints(read <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		wait := func() {
			select {
			case <-read:
			case <-time.After(5 * time.Second):
			}
		}
		h := w.Header()
		h.Add("Link", "</a.css>; rel=preload; as=style")
		h.Add("Link", "</b.js>; rel=preload; as=script")
		h.Set("X-Early", "1")
		h.Set("Content-Length", "5") // not for a 1xx
		h.Set("Transfer-Encoding", "chunked")
		h.Set("X-Injected", "a\r\nEvil: 1")
		h.Set(http.TrailerPrefix+"X-T", "t")
		w.WriteHeader(http.StatusEarlyHints)
		wait()
		h.Set("X-Second", "2")
		w.WriteHeader(http.StatusProcessing)
		wait()
		h.Del("Transfer-Encoding")
		h.Del(http.TrailerPrefix + "X-T")
		io.WriteString(w, "final")
	}
}

// TestInformationalMatchesNetHTTP: WriteHeader with a 1xx (but 101)
// sends an interim answer at once, with the header fields as they are
// (but Content-Length and Transfer-Encoding), which stay for the final
// answer (RFC 8297); byte for byte what net/http's server sends.
func TestInformationalMatchesNetHTTP(t *testing.T) {
	var interims [2]string
	var finals [2]*http.Response
	for i, kind := range []string{"net/http", "edge"} {
		read := make(chan struct{})
		var addr string
		if kind == "edge" {
			addr = start(t, &Server{Handler: earlyHints(read)})
		} else {
			addr = startStdlib(t, earlyHints(read))
		}
		c := dial(t, addr)
		c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
		first := readInterim(t, c.br)
		read <- struct{}{}
		second := readInterim(t, c.br)
		read <- struct{}{}
		if first == "" || second == "" {
			t.Fatalf("%s: informational answers %q, %q: want two, each sent at once", kind, first, second)
		}
		interims[i] = first + second
		resp, body := c.answer("GET")
		if body != "final" {
			t.Errorf("%s: final body %q", kind, body)
		}
		finals[i] = resp
	}
	if interims[0] != interims[1] {
		t.Errorf("informational answers differ:\nnet/http %q\nedge     %q", interims[0], interims[1])
	}
	if !strings.HasPrefix(interims[1], "HTTP/1.1 103 Early Hints\r\n") || !strings.Contains(interims[1], "HTTP/1.1 102 Processing\r\n") {
		t.Errorf("edge sent %q", interims[1])
	}
	for _, k := range []string{"Link", "X-Early", "X-Second"} {
		if got, want := finals[1].Header.Values(k), finals[0].Header.Values(k); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("final answer's %s: edge %q, net/http %q", k, got, want)
		}
	}
}

// TestInformational100ReplacesAutomatic: a handler that sends 100
// Continue itself answers the client's Expect: no second 100 goes out
// when it reads the body (as with net/http).
func TestInformational100ReplacesAutomatic(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusContinue)
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, "got "+string(b))
	})
	for _, kind := range []string{"net/http", "edge"} {
		addr := start(t, &Server{Handler: h})
		if kind == "net/http" {
			addr = startStdlib(t, h)
		}
		c := dial(t, addr)
		c.send("POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
		if interim := readInterim(t, c.br); interim != "HTTP/1.1 100 Continue\r\n\r\n" {
			t.Fatalf("%s: before the body: %q", kind, interim)
		}
		c.send("abc")
		if interim := readInterim(t, c.br); interim != "" {
			t.Errorf("%s: after the body: %q", kind, interim)
		}
		if resp, body := c.answer("POST"); resp.StatusCode != 200 || body != "got abc" {
			t.Errorf("%s: %d %q", kind, resp.StatusCode, body)
		}
	}
}

// TestInformationalNotSentToHTTP10 is a documented difference from
// net/http, which sends "HTTP/1.0 103 ...": RFC 9110 15.2 forbids a 1xx
// to an HTTP/1.0 client (which would take it for the answer), so edge
// sends only the final answer.
func TestInformationalNotSentToHTTP10(t *testing.T) {
	read := make(chan struct{})
	close(read)
	addr := start(t, &Server{Handler: earlyHints(read)})
	c := dial(t, addr)
	c.send("GET / HTTP/1.0\r\nHost: a\r\n\r\n")
	resp, body := c.answer("GET")
	if resp.StatusCode != 200 || body != "final" {
		t.Fatalf("HTTP/1.0 client got %d %q first", resp.StatusCode, body)
	}
}
