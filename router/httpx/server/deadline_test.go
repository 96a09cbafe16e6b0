package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestHandlerReadDeadline: a read deadline set through
// http.ResponseController bounds the handler's reads of the request body:
// a body the client does not send fails with os.ErrDeadlineExceeded. As
// with net/http's server, the timeout does not stick: with a later
// deadline, the body is read once the client sends it.
func TestHandlerReadDeadline(t *testing.T) {
	type result struct {
		err     error
		elapsed time.Duration
		body    string
		err2    error
	}
	results := make(chan result, 1)
	sendBody := make(chan struct{})
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		var res result
		t0 := time.Now()
		if err := rc.SetReadDeadline(t0.Add(50 * time.Millisecond)); err != nil {
			panic(err)
		}
		_, res.err = r.Body.Read(make([]byte, 10))
		res.elapsed = time.Since(t0)
		if err := rc.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			panic(err)
		}
		close(sendBody)
		b, err := io.ReadAll(r.Body)
		res.body, res.err2 = string(b), err
		results <- res
		io.WriteString(w, "done")
	})})
	c := dial(t, addr)
	c.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n")
	<-sendBody
	c.send("0123456789")
	res := <-results
	if !errors.Is(res.err, os.ErrDeadlineExceeded) || res.elapsed > 3*time.Second {
		t.Errorf("first read: %v after %v, want os.ErrDeadlineExceeded at once", res.err, res.elapsed)
	}
	if res.body != "0123456789" || res.err2 != nil {
		t.Errorf("read with a later deadline: %q, %v", res.body, res.err2)
	}
	if _, body := c.answer("POST"); body != "done" {
		t.Errorf("answer %q", body)
	}
}

// TestHandlerWriteDeadline: a write deadline set through
// http.ResponseController bounds writes to a client that reads nothing.
func TestHandlerWriteDeadline(t *testing.T) {
	errs := make(chan error, 1)
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			panic(err)
		}
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		var err error
		for i := 0; i < 64 && err == nil; i++ {
			_, err = w.Write(chunk)
		}
		if err == nil {
			err = http.NewResponseController(w).Flush()
		}
		errs <- err
	})})
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	select {
	case err := <-errs:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("writing 64 MiB to a client that reads nothing: %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the write deadline did not end the writes")
	}
}

// TestKeptWriteDeadlineNeverLater: a write deadline is kept from an
// earlier request only when it passes no later than the one asked for. A
// handler asking for an earlier deadline than the last request's (an hour
// away) gets it: writes to a client that reads nothing fail after it.
func TestKeptWriteDeadlineNeverLater(t *testing.T) {
	errs := make(chan error, 1)
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.URL.Path == "/first" {
			if err := rc.SetWriteDeadline(time.Now().Add(time.Hour)); err != nil {
				panic(err)
			}
			io.WriteString(w, "first")
			return
		}
		if err := rc.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
			panic(err)
		}
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		var err error
		for i := 0; i < 64 && err == nil; i++ {
			_, err = w.Write(chunk)
		}
		if err == nil {
			err = rc.Flush()
		}
		errs <- err
	})})
	c := dial(t, addr)
	c.send("GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
	if _, body := c.answer("GET"); body != "first" {
		t.Fatalf("first answer %q", body)
	}
	c.send("GET /second HTTP/1.1\r\nHost: a\r\n\r\n")
	select {
	case err := <-errs:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("writing 64 MiB to a client that reads nothing: %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the second request's earlier write deadline did not end the writes")
	}
}

// TestDeadlinesEndWithTheirRequest: deadlines a handler set (here already
// past, so that any later use fails at once) do not apply to the next
// request on the connection: neither to reading its head, part of which
// is already buffered, nor to writing its answer.
func TestDeadlinesEndWithTheirRequest(t *testing.T) {
	for _, kind := range []string{"plain", "body", "watched"} {
		t.Run(kind, func(t *testing.T) {
			addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				if r.URL.Path != "/set" {
					io.WriteString(w, "served "+r.URL.Path)
					return
				}
				if kind == "watched" {
					_ = r.Context().Done()
				}
				w.Header().Set("Content-Length", "3")
				io.WriteString(w, "set")
				rc := http.NewResponseController(w)
				if err := rc.Flush(); err != nil {
					panic(err)
				}
				past := time.Now().Add(-time.Second)
				if rc.SetReadDeadline(past) != nil || rc.SetWriteDeadline(past) != nil {
					panic("setting deadlines failed")
				}
			})})
			c := dial(t, addr)
			first := "GET /set HTTP/1.1\r\nHost: a\r\n\r\n"
			if kind == "body" {
				first = "POST /set HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nab"
			}
			next := "GET /next HTTP/1.1\r\nHost: a\r\n\r\n"
			c.send(first + next[:10])
			if _, body := c.answer("GET"); body != "set" {
				t.Fatalf("first answer %q", body)
			}
			c.send(next[10:])
			if resp, body := c.answer("GET"); resp.StatusCode != 200 || body != "served /next" {
				t.Fatalf("next request: %d %q", resp.StatusCode, body)
			}
			c.send("GET /last HTTP/1.1\r\nHost: a\r\n\r\n")
			if _, body := c.answer("GET"); body != "served /last" {
				t.Fatalf("last request: %q", body)
			}
		})
	}
}

// TestReadDeadlineLeavesWatchAlone: a read deadline set once the body is
// read has no read to bound but the background one, and must not pass
// for the client leaving (or stop the watch for it): the request's
// context ends when the client goes, not when the deadline passes.
func TestReadDeadlineLeavesWatchAlone(t *testing.T) {
	type result struct{ afterDeadline, afterClose error }
	results := make(chan result, 1)
	deadlineSet := make(chan struct{})
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		_ = ctx.Done()
		if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
			panic(err)
		}
		var res result
		// The watch's read, had it been given the deadline, would fail
		// at once; give it a moment to show.
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
		res.afterDeadline = ctx.Err()
		close(deadlineSet)
		select {
		case <-ctx.Done():
		case <-time.After(5 * time.Second):
		}
		res.afterClose = ctx.Err()
		results <- res
	})})
	c := dial(t, addr)
	c.send("GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	<-deadlineSet
	c.c.Close()
	res := <-results
	if res.afterDeadline != nil {
		t.Errorf("the context ended when the read deadline passed: %v", res.afterDeadline)
	}
	if !errors.Is(res.afterClose, context.Canceled) {
		t.Errorf("after the client left: %v, want context.Canceled", res.afterClose)
	}
}

// TestEnableFullDuplex: as with net/http's EnableFullDuplex, the handler
// may read the request body after its answer's head went out (edge always
// allows it).
func TestEnableFullDuplex(t *testing.T) {
	addr := start(t, &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
		if err := rc.Flush(); err != nil {
			panic(err)
		}
		b, err := io.ReadAll(r.Body)
		if err != nil {
			panic(err)
		}
		io.WriteString(w, "echo "+string(b))
	})})
	c := dial(t, addr)
	c.send("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n")
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("head: %v %v", resp, err)
	}
	c.send("hello")
	b, err := io.ReadAll(resp.Body)
	if string(b) != "echo hello" || err != nil {
		t.Fatalf("body %q, %v", b, err)
	}
	if !strings.EqualFold(resp.TransferEncoding[0], "chunked") {
		t.Errorf("framing %v", resp.TransferEncoding)
	}
}
