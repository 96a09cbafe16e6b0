package proxy

import (
	"errors"
	"net/http"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// A refused stream: an HTTP/2 backend (scheme h2c or h2) took the request
// on no stream. It refused each stream the client started for it
// (REFUSED_STREAM, or past a GOAWAY's last stream), or granted none
// (SETTINGS_MAX_CONCURRENT_STREAMS 0), within the client's bounds
// (client.H2MaxStreams, client.H2MaxDials): a *client.StreamRefusedError.
//
// The backend did not process the request (RFC 9113 8.7), so it is sent
// to another backend whatever its method, even a POST, and whatever
// retry.attempts says; unlike a refused connect it costs the refusing
// backend something and may be a backend shedding load, so each such
// retry draws on the route's retry budget (--retry-budget, at least
// --retry-budget-min in each window). The refusing backend is excluded for
// the rest of the request. When no backend or no budget is left, the
// answer is 503 backend-refused-stream with a Retry-After: the service is
// unavailable for now, not broken.
//
// For the breaker and passive health it is a failure, as a failed connect
// is, and it ejects the backend at once: a backend that takes no stream
// is unavailable, and every request sent to it would pay the client's
// bounds again.

// refusedStreamRetry reports whether the retry budget allows one more
// attempt after a refused stream.
func (x *exchange) refusedStreamRetry() bool { return x.retryBudgetAllows() }

// logRefusedStream logs the backend that took the request on no stream,
// and why.
func (x *exchange) logRefusedStream(b *router.Backend, err error) {
	var se *client.StreamRefusedError
	errors.As(err, &se)
	x.p.log.Warn().Str("event", "backend_refused_stream").Str("route", x.route.Config().ID).Str("backend", b.HostPort()).
		Str("reason", se.Reason).Int("streams", se.Streams).Int("dials", se.Dials).AnErr("error", se.Err).
		Msg("HTTP/2 backend took the request on no stream: " + se.Reason)
}

// replyRefusedStream answers 503 backend-refused-stream with a
// Retry-After (RFC 9110 10.2.3); a gRPC call gets UNAVAILABLE (reply).
func (x *exchange) replyRefusedStream() {
	x.w.Header()["Retry-After"] = x.p.retryAfterValue(noHealthyRetryAfter)
	x.reply(http.StatusServiceUnavailable, DiagnosticBackendRefusedStream, "backend refused the request's HTTP/2 stream\n")
}
