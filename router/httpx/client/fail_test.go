package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// How a failed exchange is reported, which decides whether the proxy may
// send the request to another backend (ClosedBeforeAnswer, for idempotent
// requests) or whether this client sends it again itself
// (errNothingReceived). A reset that beats the request's write on a new
// connection (a backend closing its listener resets the connections in its
// accept queue) is a close before the answer, exactly like a reset seen
// while awaiting the answer: which one comes first is scheduling.
func TestFailureClassification(t *testing.T) {
	reset := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}
	pipe := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	readReset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name            string
		err             error
		reused, writing bool
		received        bool // a byte of answer came before the failure
		method          string
		nothingReceived bool // this client may send it again on a new connection
		closedBeforeAns bool // the proxy may send it elsewhere if idempotent
	}{
		{"new connection, reset before the write", reset, false, true, false, "GET", false, true},
		{"new connection, broken pipe on the write", pipe, false, true, false, "GET", false, true},
		{"new connection, reset awaiting the answer", readReset, false, false, false, "GET", false, true},
		{"new connection, POST reset before the write", reset, false, true, false, "POST", false, true},
		{"pooled connection, reset before the write", reset, true, true, false, "POST", true, true},
		{"pooled connection, GET reset awaiting the answer", readReset, true, false, false, "GET", true, true},
		{"pooled connection, POST reset awaiting the answer", readReset, true, false, false, "POST", false, true},
		{"new connection, reset after part of the answer", readReset, false, false, true, "GET", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			tr := New(Options{DialTimeout: time.Second})
			defer tr.Shutdown()
			c, err := tr.dial(context.Background(), ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			c.reused = tc.reused
			c.readMark = c.counted.n
			if tc.received {
				c.counted.n++
			}
			req, _ := http.NewRequest(tc.method, "http://"+ln.Addr().String()+"/", strings.NewReader(""))
			got := c.fail(tc.err, tc.writing, req)
			if !errors.Is(got, tc.err) {
				t.Errorf("%v does not wrap the cause %v", got, tc.err)
			}
			if errors.Is(got, errNothingReceived) != tc.nothingReceived {
				t.Errorf("%v: nothing received = %v, want %v", got, !tc.nothingReceived, tc.nothingReceived)
			}
			if ClosedBeforeAnswer(got) != tc.closedBeforeAns {
				t.Errorf("%v: ClosedBeforeAnswer = %v, want %v", got, !tc.closedBeforeAns, tc.closedBeforeAns)
			}
		})
	}
}

// net/http's Transport (Standard) reports a reset as the failing read's or
// write's error, wrapped; a refused or timed-out dial and a timeout are
// not a close before the answer.
func TestClosedBeforeAnswerOnStandardErrors(t *testing.T) {
	reset := func(op string) error {
		return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, syscall.ECONNRESET)}
	}
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", reset("write")), true},
		{fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", reset("read")), true},
		{fmt.Errorf("readLoopPeekFailLocked: %w", errors.New("EOF wrapped")), false},
		{fmt.Errorf("wrapped: %w", reset("dial")), false},
		{timeout, false},
	} {
		if got := ClosedBeforeAnswer(tc.err); got != tc.want {
			t.Errorf("ClosedBeforeAnswer(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
