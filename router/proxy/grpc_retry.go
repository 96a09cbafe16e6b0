package proxy

import (
	"io"
	"net/http"
	"sync"
)

// A gRPC call is retried (within the route's retry.attempts, its retry
// budget, and the free retries of mayRetry for a connect that failed)
// only before any of its answer reached the client, and only when the
// backend did not take it: the connect failed (the call never left), or
// the backend answered Trailers-Only with UNAVAILABLE, the status gRPC
// defines as "safe to retry" (grpc/doc/statuscodes.md: "a transient
// condition, which can be corrected by retrying"; gRFC A6 retries it
// likewise before any response message). Any other status, a stream that
// began its answer, a reset or a timeout is the answer.
//
// A gRPC request body is a stream that may wait on the answer, so it is
// never read ahead (readBody); the first attempt records it as it goes
// (grpcReplay, at most the route's retry.bodyBuffer), and a retry sends
// the record again, then the rest. After a Trailers-Only answer that is
// possible only if the body had ended by then: the record is then all of
// it, and no earlier attempt is still reading.

// grpcRetryable reports whether a gRPC call's failed attempt may be tried
// again.
func (x *exchange) grpcRetryable(res *attemptResult, maxAttempts int) bool {
	if x.req.Context().Err() != nil || res.clientGone || res.badBody || res.deadlinePassed {
		return false
	}
	switch {
	case res.notSent:
		return x.replayable || x.replay != nil && x.replay.canReplay(true)
	case res.refusedStream:
		// Not processed: the record of a body that was read is complete
		// or was ended by the Transport's close (replayReader.Close).
		return (x.replayable || x.replay != nil && x.replay.canReplay(true)) && x.refusedStreamRetry()
	case res.resp != nil && grpcUnavailableHead(res.resp):
		if !x.replayable && (x.replay == nil || !x.replay.canReplay(false)) {
			return false
		}
		if x.attempts-x.free >= maxAttempts {
			return false
		}
		return x.retryBudgetAllows()
	}
	return false
}

// grpcUnavailableHead reports a Trailers-Only gRPC answer of UNAVAILABLE:
// HTTP 200, a gRPC content type and grpc-status 14 in the head.
func grpcUnavailableHead(resp *http.Response) bool {
	st := resp.Header["Grpc-Status"]
	return resp.StatusCode == http.StatusOK && isGRPC(resp.Header) && len(st) == 1 && st[0] == "14"
}

// grpcReplay records a gRPC request body as the first attempt reads it,
// up to limit bytes, so that a retry can send it again.
type grpcReplay struct {
	mu    sync.Mutex
	src   io.ReadCloser // the client's body (a clientBody)
	buf   []byte
	limit int
	eof   bool // src ended: buf is the whole body
	over  bool // more than limit was read, or recording stopped
}

func newGRPCReplay(src io.ReadCloser, limit int64) *grpcReplay {
	return &grpcReplay{src: src, limit: int(limit)}
}

// reader returns an attempt's body: the record, then the rest of src.
func (g *grpcReplay) reader() io.ReadCloser { return &replayReader{g: g} }

// canReplay reports whether the record can be sent again: all of the
// body when it ended, or, for an attempt that never connected
// (notSent), what was read (nothing) and the rest.
func (g *grpcReplay) canReplay(notSent bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.over && (g.eof || notSent)
}

// stop ends the recording: the call is answered, no retry will come.
func (g *grpcReplay) stop() {
	g.mu.Lock()
	g.over, g.buf = true, nil
	g.mu.Unlock()
}

// replayReader is one attempt's read of a grpcReplay.
type replayReader struct {
	g       *grpcReplay
	off     int
	readSrc bool // this reader read from src: its Close is src's (under g.mu)
}

func (r *replayReader) Read(p []byte) (int, error) {
	g := r.g
	g.mu.Lock()
	if !g.over && r.off < len(g.buf) {
		n := copy(p, g.buf[r.off:])
		r.off += n
		g.mu.Unlock()
		return n, nil
	}
	if g.eof {
		g.mu.Unlock()
		return 0, io.EOF
	}
	r.readSrc = true
	g.mu.Unlock()
	n, err := g.src.Read(p) // may wait for the client: not under the lock
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.over {
		if len(g.buf)+n > g.limit {
			g.over, g.buf = true, nil
		} else {
			g.buf = append(g.buf, p[:n]...)
			r.off += n
		}
	}
	if err == io.EOF {
		g.eof = true
	}
	return n, err
}

// Close closes the client's body when this attempt read from it (a
// transport stops a body it no longer sends that way), which also ends
// any replay; an attempt that read nothing (a connect that failed)
// leaves it for the next.
func (r *replayReader) Close() error {
	r.g.mu.Lock()
	closeSrc := r.readSrc && !r.g.eof
	if closeSrc {
		r.g.over, r.g.buf = true, nil
	}
	r.g.mu.Unlock()
	if !closeSrc {
		return nil
	}
	return r.g.src.Close()
}
