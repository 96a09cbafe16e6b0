package proxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// scriptedGRPC is an h2c gRPC backend whose nth call (from 1) is
// answered by answer(n): a Trailers-Only status, or "" to echo the
// request body with grpc-status 0 in trailers; readFirst reads the whole
// body before answering.
func scriptedGRPC(t *testing.T, hits *atomic.Int64, readFirst bool, answer func(n int64) (status string, trailersOnly bool)) config.Backend {
	t.Helper()
	return newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		var body []byte
		if readFirst {
			body, _ = io.ReadAll(r.Body)
		}
		st, only := answer(n)
		w.Header().Set("Content-Type", "application/grpc")
		if only {
			w.Header().Set("Grpc-Status", st)
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(200)
		_, _ = w.Write(body)
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", st)
	}).backend()
}

func grpcCallBody(t *testing.T, c *http.Client, base, host string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/pkg.Service/Method", body)
	req.Host = host
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	got, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	return resp, got
}

func grpcStatusOfResp(resp *http.Response) string {
	if st := resp.Header.Get("Grpc-Status"); st != "" {
		return st
	}
	return resp.Trailer.Get("Grpc-Status")
}

func withRetries(e config.Entrypoint, n int) config.Entrypoint {
	e.Retry.Attempts = n
	return e
}

// A gRPC call answered Trailers-Only UNAVAILABLE is retried within
// retry.attempts, its streamed body (no Content-Length) sent again
// whole; any other answer is the answer: an UNAVAILABLE in trailers
// (the answer had begun), another Trailers-Only status, and any
// UNAVAILABLE on a route without retries.
func TestGRPCRetriesOnlyTrailersOnlyUnavailable(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	var retried, started, internal, noRetry atomic.Int64
	unavailableOnce := func(n int64) (string, bool) {
		if n == 1 {
			return "14", true
		}
		return "0", false
	}
	h.set(config.SourceDocker,
		withRetries(h2Route("retried", config.SchemeH2C, config.BackendTLS{}, scriptedGRPC(t, &retried, true, unavailableOnce)), 3),
		withRetries(h2Route("started", config.SchemeH2C, config.BackendTLS{}, scriptedGRPC(t, &started, true,
			func(int64) (string, bool) { return "14", false })), 3),
		withRetries(h2Route("internal", config.SchemeH2C, config.BackendTLS{}, scriptedGRPC(t, &internal, true,
			func(int64) (string, bool) { return "13", true })), 3),
		h2Route("noretry", config.SchemeH2C, config.BackendTLS{}, scriptedGRPC(t, &noRetry, true, unavailableOnce)))
	base, c := grpcFront(t, h)
	msg := "\x00\x00\x00\x00\x05hello"
	for _, tc := range []struct {
		host, status, body string
		hits               *atomic.Int64
		want               int64
	}{
		{"retried.test", "0", msg, &retried, 2},
		{"started.test", "14", msg, &started, 1},
		{"internal.test", "13", "", &internal, 1},
		{"noretry.test", "14", "", &noRetry, 1},
	} {
		// io.MultiReader hides the length: the body streams, as a gRPC
		// client's does.
		resp, got := grpcCallBody(t, c, base, tc.host, io.MultiReader(strings.NewReader(msg)))
		if st := grpcStatusOfResp(resp); st != tc.status || string(got) != tc.body || tc.hits.Load() != tc.want {
			t.Errorf("%s: grpc-status %q body %q after %d calls, want %q %q after %d", tc.host, st, got, tc.hits.Load(), tc.status, tc.body, tc.want)
		}
	}
	if v := metricValue(t, h, "levee_retries_total", map[string]string{"route": "retried"}); v != 1 {
		t.Errorf("levee_retries_total{route=retried} = %v, want 1", v)
	}
}

// A gRPC call whose backend refuses the connection goes to the next
// backend, its body sent whole, even without retries configured (the
// call never left); every call succeeds.
func TestGRPCRetriesAFailedConnect(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	var hits atomic.Int64
	good := scriptedGRPC(t, &hits, true, func(int64) (string, bool) { return "0", false })
	h.set(config.SourceDocker, h2Route("api", config.SchemeH2C, config.BackendTLS{}, deadBackend(t), good))
	base, c := grpcFront(t, h)
	msg := "\x00\x00\x00\x00\x03abc"
	for i := range 4 {
		resp, got := grpcCallBody(t, c, base, "api.test", io.MultiReader(strings.NewReader(msg)))
		if st := grpcStatusOfResp(resp); st != "0" || string(got) != msg {
			t.Fatalf("call %d: grpc-status %q body %q, want 0 and the body echoed", i, st, got)
		}
	}
	if hits.Load() != 4 {
		t.Fatalf("the live backend served %d calls, want 4", hits.Load())
	}
}

// A call whose body has not ended when the backend answers Trailers-Only
// UNAVAILABLE (a stream still sending) cannot be sent again: the client
// gets the UNAVAILABLE at once, the backend is asked once, and nothing
// waits on the client's open body.
func TestGRPCStreamStillSendingIsNotRetried(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	var hits atomic.Int64
	h.set(config.SourceDocker, withRetries(h2Route("stream", config.SchemeH2C, config.BackendTLS{},
		scriptedGRPC(t, &hits, false, func(int64) (string, bool) { return "14", true })), 3))
	base, c := grpcFront(t, h)
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte("\x00\x00\x00\x00\x01x")) }() // one message, then the stream stays open
	done := make(chan struct{})
	var st string
	go func() {
		defer close(done)
		resp, _ := grpcCallBody(t, c, base, "stream.test", pr)
		st = grpcStatusOfResp(resp)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a call with an open body waited for it")
	}
	if st != "14" || hits.Load() != 1 {
		t.Fatalf("grpc-status %q after %d calls, want 14 after 1", st, hits.Load())
	}
}

// The record of a body stops at its limit: a larger body is not
// replayed, and reading it whole still works.
func TestGRPCReplayRecordsUpToItsLimit(t *testing.T) {
	src := io.NopCloser(bytes.NewReader(bytes.Repeat([]byte("a"), 100)))
	g := newGRPCReplay(src, 64)
	got, err := io.ReadAll(g.reader())
	if err != nil || len(got) != 100 {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	if g.canReplay(false) || g.canReplay(true) {
		t.Fatal("a body over the limit is replayable")
	}
	small := newGRPCReplay(io.NopCloser(strings.NewReader("abc")), 64)
	if !small.canReplay(true) || small.canReplay(false) {
		t.Fatal("an unread body: replayable only after a failed connect")
	}
	first, _ := io.ReadAll(small.reader())
	second, _ := io.ReadAll(small.reader())
	if string(first) != "abc" || string(second) != "abc" || !small.canReplay(false) {
		t.Fatalf("replay %q then %q", first, second)
	}
	small.stop()
	if small.canReplay(true) {
		t.Fatal("replayable after stop")
	}
}
