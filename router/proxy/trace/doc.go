// Package trace gives the request path its OpenTelemetry spans, and
// nothing else: it starts and ends them, and writes the propagation
// headers onto a backend request.
//
// The model is two kinds of span per request:
//
//   - the server span (kind server), one per client request, started when
//     Levee reads the request and ended when its answer is written. Its
//     parent is the span the client named in its traceparent (W3C Trace
//     Context) or b3 header, when the configured propagators read one;
//     its attributes name the route, the listener, the protocol, the
//     status, the breaker's state at admission and its decision, and the
//     policy or diagnostic that answered the request.
//   - the attempt span (kind client), one per backend attempt, child of
//     the server span: retries are siblings. It names the backend and the
//     attempt number, how the connection was had (reused from the pool, or
//     dialled: the connect and TLS handshake times, an event "connected"),
//     and the time to the answer's head (first byte, an event too). Levee
//     writes the attempt span's context onto the backend request
//     (replacing the client's traceparent), so that a backend's own span
//     is the attempt's child.
//
// A nil *Tracer is tracing off: every method is a nil check that returns
// at once, allocates nothing and leaves the request's headers as the
// client sent them (a traceparent passes through unchanged). The SDK
// (exporter, sampler, resource) is the caller's: New takes any
// trace.TracerProvider.
package trace
