package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
)

// Limits of what one request may take from an HTTP/2 backend that does
// not take it on a stream.
//
// net/http's HTTP/2 Transport sends a request again when the backend
// refused its stream before processing it (REFUSED_STREAM, or a stream
// past a GOAWAY's last stream identifier: RFC 9113 8.7), up to 7 times,
// waiting 1, 2, 4, 8, 16 and 32 s between the tries after the second: a
// backend that refuses every stream holds a request for over a minute.
// And when no connection it has can take another stream (a backend whose
// SETTINGS_MAX_CONCURRENT_STREAMS is 0), it dials a new one for each try,
// with no end but the request's own. NewH2's client bounds both per round
// trip, and ends it with a *StreamRefusedError.
const (
	// H2MaxStreams is the most streams started for one request: the
	// first and the Transport's immediate retry (on a new connection
	// after a GOAWAY). The third start is cancelled, after the
	// Transport's 1 s (+10 % jitter) wait before it: a request whose
	// streams the backend refused ends within about 1.1 s. The cancel
	// comes before the third stream's HEADERS, which the Transport
	// writes only for a request whose context is live: the backend sees
	// two streams.
	H2MaxStreams = 2
	// H2MaxDials is the most connections dialled for one request: the
	// first and one after a GOAWAY. A third dial fails without
	// connecting.
	H2MaxDials = 2
)

// Reasons of a *StreamRefusedError.
const (
	// ReasonStreamsRefused: the backend refused each stream started for
	// the request (REFUSED_STREAM, or past a GOAWAY's last stream), as
	// many as H2MaxStreams.
	ReasonStreamsRefused = "refused every stream"
	// ReasonNoStreamSlot: no connection to the backend could take a
	// stream for the request, after H2MaxDials new ones (a backend
	// whose SETTINGS_MAX_CONCURRENT_STREAMS is 0).
	ReasonNoStreamSlot = "granted no stream"
)

// StreamRefusedError is the error of a round trip on an HTTP/2 backend
// that did not take the request on any stream (H2MaxStreams,
// H2MaxDials). The backend did not process the request (RFC 9113 8.7):
// it may be sent to another backend whatever its method.
type StreamRefusedError struct {
	// Addr is the backend, host:port.
	Addr string
	// Reason is ReasonStreamsRefused or ReasonNoStreamSlot.
	Reason string
	// Streams and Dials are the streams started and the connections
	// dialled for the request.
	Streams, Dials int
	// Err is the Transport's own error, when it gave one.
	Err error
}

func (e *StreamRefusedError) Error() string {
	s := fmt.Sprintf("HTTP/2 backend %s %s: %d stream(s) started, %d connection(s) dialled for the request", e.Addr, e.Reason, e.Streams, e.Dials)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *StreamRefusedError) Unwrap() error { return e.Err }

// IsStreamRefused reports whether err is a *StreamRefusedError.
func IsStreamRefused(err error) bool {
	var se *StreamRefusedError
	return errors.As(err, &se)
}

// h2Budget counts what one round trip on an HTTP/2 backend took. It
// rides in the request's context, which the Transport passes on (values
// kept) to the dials it makes for the request.
type h2Budget struct {
	addr    string
	streams atomic.Int32
	dials   atomic.Int32
	cancel  context.CancelCauseFunc
}

type h2BudgetKey struct{}

// gotConn counts a stream start (the Transport calls GotConn before each)
// and cancels the round trip, with a *StreamRefusedError as its cause,
// at the start past H2MaxStreams.
func (b *h2Budget) gotConn() {
	if b.streams.Add(1) > H2MaxStreams {
		b.cancel(b.refused(ReasonStreamsRefused, nil))
	}
}

// stop cancels the round trip's context (the end of its body).
func (b *h2Budget) stop() { b.cancel(nil) }

// ended reports whether b cancelled the round trip of ctx.
func (b *h2Budget) ended(ctx context.Context) bool {
	var se *StreamRefusedError
	return errors.As(context.Cause(ctx), &se)
}

// refused is the round trip's *StreamRefusedError.
func (b *h2Budget) refused(reason string, err error) *StreamRefusedError {
	return &StreamRefusedError{Addr: b.addr, Reason: reason, Streams: int(min(b.streams.Load(), H2MaxStreams)),
		Dials: int(min(b.dials.Load(), H2MaxDials)), Err: err}
}

// finish turns the error of a round trip that b ended, or in which the
// Transport gave up on a refused stream it could not send again (a
// request body it cannot rewind), into a *StreamRefusedError. parent is
// the request's own context: a client that went away is not a refusal.
func (b *h2Budget) finish(parent, ctx context.Context, err error) error {
	if parent.Err() != nil {
		return err
	}
	var se *StreamRefusedError
	switch {
	case errors.As(context.Cause(ctx), &se):
		return se
	case errors.As(err, &se): // a dial past H2MaxDials
		return err
	case refusedByPeer(err):
		return b.refused(ReasonStreamsRefused, err)
	}
	return err
}

// refusedByPeer reports the Transport's error for a stream the backend
// refused that it did not send again because the request body cannot be
// rewound. Its stream error type is not exported: the text is what it
// says (http2StreamError's "...; REFUSED_STREAM; received from peer", and
// the GOAWAY error), both under "cannot retry".
func refusedByPeer(err error) bool {
	s := err.Error()
	return strings.Contains(s, "cannot retry") &&
		(strings.Contains(s, "REFUSED_STREAM; received from peer") || strings.Contains(s, "graceful shutdown GOAWAY"))
}

// budgetDials wraps dial so that a request's dials past H2MaxDials fail
// with a *StreamRefusedError, before connecting.
func budgetDials(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if b, ok := ctx.Value(h2BudgetKey{}).(*h2Budget); ok && b.dials.Add(1) > H2MaxDials {
			return nil, b.refused(ReasonNoStreamSlot, nil)
		}
		return dial(ctx, network, addr)
	}
}
