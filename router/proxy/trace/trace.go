package trace

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Scope is the instrumentation scope Levee's spans are reported under.
const Scope = "github.com/levee-proxy/levee/router/proxy"

// Attribute keys Levee sets beside the OpenTelemetry semantic
// conventions' HTTP ones.
const (
	KeyRoute           = attribute.Key("levee.route")
	KeyListener        = attribute.Key("levee.listener")
	KeyBreakerState    = attribute.Key("levee.breaker.state")
	KeyBreakerDecision = attribute.Key("levee.breaker.decision")
	KeyDiagnostic      = attribute.Key("levee.diagnostic")
	KeyPolicyRefused   = attribute.Key("levee.policy.refused")
	KeyAttempt         = attribute.Key("levee.attempt")
	KeyBackend         = attribute.Key("levee.backend")
	KeyFirstByteMs     = attribute.Key("levee.first_byte_ms")
	KeyDialMs          = attribute.Key("levee.dial_ms")
	KeyTLSHandshakeMs  = attribute.Key("levee.tls_handshake_ms")
	KeyConnReused      = attribute.Key("levee.connection.reused")
)

// Tracer starts Levee's spans. A nil *Tracer is tracing off.
type Tracer struct {
	tracer oteltrace.Tracer
	prop   propagation.TextMapPropagator
}

// New returns a Tracer on tp that reads and writes context with prop.
func New(tp oteltrace.TracerProvider, prop propagation.TextMapPropagator) *Tracer {
	return &Tracer{tracer: tp.Tracer(Scope), prop: prop}
}

// Server is a request's server span. A nil *Server (tracing off) does
// nothing.
type Server struct {
	t    *Tracer
	ctx  context.Context
	span oteltrace.Span
	att  attempt // the current attempt's, span nil when none
}

// StartServer starts req's server span. It returns nil when t is nil.
//
// When trustParent is set (the peer is a trusted proxy), the span's parent
// is the context req's headers carry, and its sampled flag decides. Any
// other client's context is only linked to a new root trace: a client may
// not pick the trace an operator's spans land in, nor force its requests
// past --tracing-sample-ratio by sending sampled flags.
func (t *Tracer) StartServer(req *http.Request, listener string, trustParent bool) *Server {
	if t == nil {
		return nil
	}
	parent := t.prop.Extract(req.Context(), propagation.HeaderCarrier(req.Header))
	opts := []oteltrace.SpanStartOption{oteltrace.WithSpanKind(oteltrace.SpanKindServer)}
	if !trustParent {
		opts = append(opts, oteltrace.WithNewRoot())
		if sc := oteltrace.SpanContextFromContext(parent); sc.IsValid() {
			opts = append(opts, oteltrace.WithLinks(oteltrace.Link{SpanContext: sc}))
		}
	}
	ctx, span := t.tracer.Start(parent, req.Method, append(opts,
		oteltrace.WithAttributes(
			attribute.String("http.request.method", req.Method),
			attribute.String("url.path", req.URL.Path),
			attribute.String("server.address", req.Host),
			attribute.String("network.protocol.name", "http"),
			attribute.String("network.protocol.version", protoVersion(req)),
			KeyListener.String(listener),
		))...)
	return &Server{t: t, ctx: ctx, span: span}
}

func protoVersion(req *http.Request) string {
	switch req.ProtoMajor {
	case 2:
		return "2"
	case 3:
		return "3"
	}
	if req.ProtoMinor == 0 {
		return "1.0"
	}
	return "1.1"
}

// Route names the route the request matched; the span takes its name.
func (s *Server) Route(id string) {
	if s == nil {
		return
	}
	s.span.SetName(id)
	s.span.SetAttributes(KeyRoute.String(id))
}

// Breaker records the route breaker's state at admission and whether it
// admitted the request.
func (s *Server) Breaker(state string, admitted bool) {
	if s == nil {
		return
	}
	d := "admitted"
	if !admitted {
		d = "rejected"
	}
	s.span.SetAttributes(KeyBreakerState.String(state), KeyBreakerDecision.String(d))
}

// End records the answer and ends the span: status is the status sent
// (0 when the client left first), diagnostic the X-Levee-Diagnostic
// given, refusedByPolicy whether a policy answered.
func (s *Server) End(status int, diagnostic string, refusedByPolicy bool) {
	if s == nil {
		return
	}
	s.EndAttempt(nil)
	if status > 0 {
		s.span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if diagnostic != "" {
		s.span.SetAttributes(KeyDiagnostic.String(diagnostic))
	}
	if refusedByPolicy {
		s.span.SetAttributes(KeyPolicyRefused.Bool(true))
	}
	// A server span is an error for a 5xx only (OpenTelemetry HTTP
	// semantic conventions): a 4xx is the client's.
	if status >= 500 {
		s.span.SetStatus(codes.Error, http.StatusText(status))
	}
	s.span.End()
}

// TraceID is the span's trace id in hex, "" when there is none (nil or
// not recording and no parent).
func (s *Server) TraceID() string {
	if s == nil {
		return ""
	}
	sc := s.span.SpanContext()
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// attempt is one backend attempt's client span.
type attempt struct {
	span  oteltrace.Span
	start time.Time
}

// StartAttempt starts the client span of attempt n (from 1) on backend
// (host:port), ending the previous attempt's if it was not, and writes
// its context into h, the backend request's header, replacing what the
// client sent.
func (s *Server) StartAttempt(n int, backend string, h http.Header) {
	if s == nil {
		return
	}
	s.EndAttempt(nil)
	ctx, span := s.t.tracer.Start(s.ctx, "attempt", oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithAttributes(KeyAttempt.Int(n), KeyBackend.String(backend), attribute.String("server.address", backend)))
	s.t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	s.att = attempt{span: span, start: time.Now()}
}

// WithConnTrace returns ctx carrying hooks that record, on the current
// attempt's span, how the transport got its connection: reused from the
// pool (levee.connection.reused), or dialled, with the time to connect
// (levee.dial_ms, an event "connected") and to complete the TLS handshake
// (levee.tls_handshake_ms). It returns ctx itself when s is nil or no
// attempt is current. The hooks hold the attempt's span, not s: one the
// transport calls late (a dial it finished for another request) lands on
// the span it was made for, or on nothing once that span ended.
func (s *Server) WithConnTrace(ctx context.Context) context.Context {
	if s == nil || s.att.span == nil || !s.att.span.IsRecording() {
		return ctx
	}
	span := s.att.span
	// A dual-stack dial calls ConnectStart and ConnectDone once per
	// address tried, from several goroutines: the first start counts.
	var dialStart, tlsStart atomic.Int64
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			span.SetAttributes(KeyConnReused.Bool(info.Reused))
		},
		ConnectStart: func(string, string) { dialStart.CompareAndSwap(0, time.Now().UnixNano()) },
		ConnectDone: func(_, _ string, err error) {
			if start := dialStart.Load(); err == nil && start != 0 {
				span.AddEvent("connected")
				span.SetAttributes(KeyDialMs.Float64(msSince(start)))
			}
		},
		TLSHandshakeStart: func() { tlsStart.CompareAndSwap(0, time.Now().UnixNano()) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) {
			if start := tlsStart.Load(); err == nil && start != 0 {
				span.SetAttributes(KeyTLSHandshakeMs.Float64(msSince(start)))
			}
		},
	})
}

// msSince is the milliseconds since unixNano, to the microsecond.
func msSince(unixNano int64) float64 {
	return float64(time.Now().UnixNano()-unixNano) / 1e6
}

// Answered records the backend answer's head on the current attempt: its
// status, and the time from the attempt's start (the dial included) to
// the first byte.
func (s *Server) Answered(status int) {
	if s == nil || s.att.span == nil {
		return
	}
	a := s.att
	a.span.AddEvent("first byte")
	a.span.SetAttributes(attribute.Int("http.response.status_code", status),
		KeyFirstByteMs.Float64(float64(time.Since(a.start).Microseconds())/1000))
	if status >= 500 {
		a.span.SetStatus(codes.Error, http.StatusText(status))
	}
}

// EndAttempt ends the current attempt's span, if any; err is its
// failure, nil when it was answered.
func (s *Server) EndAttempt(err error) {
	if s == nil || s.att.span == nil {
		return
	}
	if err != nil {
		s.att.span.RecordError(err)
		s.att.span.SetStatus(codes.Error, err.Error())
	}
	s.att.span.End()
	s.att = attempt{}
}
