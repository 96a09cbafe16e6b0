package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// trailerHandler declares trailers in the ways handlers do: the Trailer
// field before WriteHeader (values set after the body), http.TrailerPrefix
// keys (before the head, or after the body), both, or with a framing that
// leaves no room for trailers.
var trailerHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/plain") // net/http would sniff one
	big := strings.Repeat("b", 3*maxPending)
	switch r.URL.Path {
	case "/declared":
		h.Set("Trailer", "X-Checksum")
		io.WriteString(w, "body")
		h.Set("X-Checksum", "abc")
	case "/declared-big":
		h.Set("Trailer", "X-Checksum")
		io.WriteString(w, big)
		h.Set("X-Checksum", "abc")
	case "/declared-list":
		h.Add("Trailer", "x-a, Cache-Control")
		h.Add("Trailer", "X-B,X-A")
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		io.WriteString(w, "more")
		h.Set("X-A", "1")
		h.Add("X-B", "2")
		h.Add("X-B", "3")
		h.Set("Content-Length", "99") // too late to frame the body
	case "/declared-set-before":
		h.Set("Trailer", "X-Checksum")
		h.Set("X-Checksum", "early")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "body")
		h.Set("X-Checksum", "late")
	case "/declared-no-body":
		h.Set("Trailer", "X-Checksum")
		w.WriteHeader(http.StatusAccepted)
		h.Set("X-Checksum", "abc")
	case "/declared-length":
		h.Set("Trailer", "X-Checksum")
		h.Set("Content-Length", "4")
		io.WriteString(w, "body")
		h.Set("X-Checksum", "abc")
	case "/prefix-before":
		h.Set(http.TrailerPrefix+"X-P", "early")
		io.WriteString(w, "body")
		h.Set(http.TrailerPrefix+"X-P", "late")
	case "/prefix-after-flush":
		io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		h.Set(http.TrailerPrefix+"X-P", "1")
		h.Set(http.TrailerPrefix+"x-lower", "2")
	case "/prefix-after-small":
		// net/http decides the framing from the header as it was at
		// WriteHeader: this small body gets a Content-Length, and the
		// trailer is dropped.
		io.WriteString(w, "body")
		h.Set(http.TrailerPrefix+"X-P", "1")
	case "/both":
		h.Set("Trailer", "X-A")
		io.WriteString(w, "body")
		h.Set("X-A", "declared")
		h.Set(http.TrailerPrefix+"X-B", "prefixed")
		h.Set(http.TrailerPrefix+"X-A", "prefixed")
	}
})

// rawAnswer sends one request that asks to close and returns all the
// server sent.
func rawAnswer(t *testing.T, addr, req string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	return string(b)
}

// describe parses an answer into what a client sees of it, and keeps the
// raw bytes after the head when they are few (the same framing of a short
// body and its trailers is then expected byte for byte).
func describe(t *testing.T, raw, method string) string {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(raw)), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%q: body: %v", raw, err)
	}
	resp.Header.Del("Date")
	s := fmt.Sprintf("%s TE=%v CL=%d header=%v body=%d trailer=%v",
		resp.Status, resp.TransferEncoding, resp.ContentLength, resp.Header, len(body), resp.Trailer)
	if _, rest, _ := strings.Cut(raw, "\r\n\r\n"); len(rest) < 200 {
		s += fmt.Sprintf(" raw=%q", rest)
	}
	return s
}

// TestTrailersMatchNetHTTP: for each way of declaring trailers, the
// answer's framing, header, body and trailers are net/http's.
func TestTrailersMatchNetHTTP(t *testing.T) {
	edgeAddr := start(t, &Server{Handler: trailerHandler})
	stdAddr := startStdlib(t, trailerHandler)
	for _, path := range []string{
		"/declared", "/declared-big", "/declared-list", "/declared-set-before", "/declared-no-body",
		"/declared-length", "/prefix-before", "/prefix-after-flush", "/prefix-after-small", "/both",
	} {
		for _, proto := range []string{"GET %s HTTP/1.1", "HEAD %s HTTP/1.1", "GET %s HTTP/1.0"} {
			if proto[0] == 'H' && path == "/prefix-after-small" {
				// Not about trailers: net/http gives a HEAD answer the
				// Content-Length of the small body the handler wrote;
				// edge, none.
				continue
			}
			line := fmt.Sprintf(proto, path)
			req := line + "\r\nHost: a\r\nConnection: close\r\n\r\n"
			method, _, _ := strings.Cut(line, " ")
			want := describe(t, rawAnswer(t, stdAddr, req), method)
			if got := describe(t, rawAnswer(t, edgeAddr, req), method); got != want {
				t.Errorf("%s:\nedge     %s\nnet/http %s", line, got, want)
			}
		}
	}
}
