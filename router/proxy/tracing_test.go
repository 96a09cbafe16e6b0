package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/proxy/trace"
)

const clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// tracedRoute serves route "tr" on tr.test through a handler with tracer
// tr, to a backend that answers the traceparent it got.
func tracedRoute(t *testing.T, tr *trace.Tracer, trusted ...netip.Prefix) *Handler {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Got", r.Header.Get("Traceparent"))
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	r := router.New(router.Options{Logger: zerolog.Nop()})
	t.Cleanup(r.Close)
	p := New(r, Options{Logger: zerolog.Nop(), Tracer: tr, TrustedProxies: trusted})
	t.Cleanup(p.Close)
	e := ep("tr", config.Backend{Address: host, Port: n, Weight: 1})
	r.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: []config.Entrypoint{e}})
	return p
}

func tracedGet(p *Handler) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "http://tr.test/x", nil)
	req.Header.Set("Traceparent", clientTraceparent)
	w := httptest.NewRecorder()
	p.ServeHTTP(w, req)
	return w
}

// With tracing off the client's traceparent reaches the backend as it
// was sent.
func TestTracingOffPassesTraceparentThrough(t *testing.T) {
	w := tracedGet(tracedRoute(t, nil))
	if w.Code != http.StatusOK || w.Header().Get("X-Got") != clientTraceparent {
		t.Fatalf("status %d, backend got traceparent %q, want %q", w.Code, w.Header().Get("X-Got"), clientTraceparent)
	}
}

// httptest.NewRequest's peer.
var testPeer = netip.MustParsePrefix("192.0.2.1/32")

// With tracing on the backend gets the attempt span's traceparent, in
// the client's trace (the peer is a trusted proxy); the server span is the
// client span's child and the attempt span the server span's.
func TestTracingOnReplacesTraceparentWithTheAttempts(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	w := tracedGet(tracedRoute(t, trace.New(tp, propagation.TraceContext{}), testPeer))
	spans := rec.Ended()
	if w.Code != http.StatusOK || len(spans) != 2 {
		t.Fatalf("status %d, %d spans ended, want 200 and 2", w.Code, len(spans))
	}
	attempt, server := spans[0], spans[1]
	if server.Name() != "tr" || server.Parent().SpanID().String() != "00f067aa0ba902b7" ||
		server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span %q parent %s trace %s", server.Name(), server.Parent().SpanID(), server.SpanContext().TraceID())
	}
	if attempt.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Errorf("attempt's parent %s, want the server span %s", attempt.Parent().SpanID(), server.SpanContext().SpanID())
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + attempt.SpanContext().SpanID().String() + "-01"
	if got := w.Header().Get("X-Got"); got != want {
		t.Errorf("backend got traceparent %q, want %q", got, want)
	}
}

// A peer that is not a trusted proxy cannot choose the trace or force
// sampling: its sampled traceparent is only linked to a new root, and the
// sampler's own ratio (here: never) decides.
func TestTracingUntrustedPeerStartsANewRoot(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	w := tracedGet(tracedRoute(t, trace.New(tp, propagation.TraceContext{})))
	spans := rec.Ended()
	if w.Code != http.StatusOK || len(spans) != 2 {
		t.Fatalf("status %d, %d spans ended, want 200 and 2", w.Code, len(spans))
	}
	server := spans[1]
	if server.Parent().IsValid() || server.SpanContext().TraceID().String() == "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span parent %v trace %s: want a new root", server.Parent(), server.SpanContext().TraceID())
	}
	if links := server.Links(); len(links) != 1 || links[0].SpanContext.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("links %+v, want one to the client's span", links)
	}
	if got := w.Header().Get("X-Got"); got == clientTraceparent || got == "" {
		t.Errorf("backend got traceparent %q, want Levee's attempt's", got)
	}

	never := tracetest.NewSpanRecorder()
	tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(never),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())))
	tracedGet(tracedRoute(t, trace.New(tp, propagation.TraceContext{})))
	if n := len(never.Ended()); n != 0 {
		t.Errorf("%d spans recorded for an untrusted sampled traceparent at ratio 0, want 0", n)
	}
	tracedGet(tracedRoute(t, trace.New(tp, propagation.TraceContext{}), testPeer))
	if n := len(never.Ended()); n != 2 {
		t.Errorf("%d spans recorded for a trusted proxy's sampled traceparent, want 2 (parent-based)", n)
	}
}

// attrs is a span's attributes by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// The attempt span says how its connection was had: the first request's
// was dialled (levee.dial_ms, a "connected" event, before the first
// byte), the second's reused from the pool (no dial time).
func TestTracingAttemptRecordsDialAndFirstByte(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	p := tracedRoute(t, trace.New(tp, propagation.TraceContext{}), testPeer)
	tracedGet(p)
	tracedGet(p)
	spans := rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans ended, want 4", len(spans))
	}
	first, second := attrs(spans[0]), attrs(spans[2])
	dial, ok := first[trace.KeyDialMs]
	fb := first[trace.KeyFirstByteMs]
	if !ok || dial.AsFloat64() <= 0 || fb.AsFloat64() < dial.AsFloat64() {
		t.Errorf("first attempt: dial %v (set %v), first byte %v: want 0 < dial <= first byte", dial.AsFloat64(), ok, fb.AsFloat64())
	}
	if r, ok := first[trace.KeyConnReused]; !ok || r.AsBool() {
		t.Errorf("first attempt: connection.reused %v (set %v), want false", r.AsBool(), ok)
	}
	var events []string
	for _, e := range spans[0].Events() {
		events = append(events, e.Name)
	}
	if len(events) != 2 || events[0] != "connected" || events[1] != "first byte" {
		t.Errorf("first attempt's events %q, want [connected first byte]", events)
	}
	if r := second[trace.KeyConnReused]; !r.AsBool() {
		t.Errorf("second attempt: connection.reused %v, want true", r.AsBool())
	}
	if d, ok := second[trace.KeyDialMs]; ok {
		t.Errorf("second attempt (pooled connection): dial_ms %v, want none", d.AsFloat64())
	}
	if _, ok := second[trace.KeyFirstByteMs]; !ok {
		t.Errorf("second attempt: no first_byte_ms")
	}
}

// To an HTTPS backend the dialled attempt also records its TLS handshake,
// whichever client (Levee's, or net/http's under LEVEE_TEST_CLIENT=stdlib)
// does it.
func TestTracingAttemptRecordsTheTLSHandshake(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	h := newHarness(t, Options{Tracer: trace.New(tp, propagation.TraceContext{})})
	b := newHTTPSBackend(t)
	h.set(config.SourceDocker, httpsRoute("web", config.BackendTLS{CA: b.caFile}, b.backend()))
	if code, body, _ := h.get("web.test", "/"); code != 200 || !strings.HasPrefix(body, "ok over") {
		t.Fatalf("GET web.test: %d %q", code, body)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want 2", len(spans))
	}
	a := attrs(spans[0])
	hs, ok := a[trace.KeyTLSHandshakeMs]
	if !ok || hs.AsFloat64() <= 0 || a[trace.KeyDialMs].AsFloat64() <= 0 || hs.AsFloat64() > a[trace.KeyFirstByteMs].AsFloat64() {
		t.Errorf("attempt: tls_handshake_ms %v (set %v), dial_ms %v, first_byte_ms %v: want both > 0, the handshake before the first byte",
			hs.AsFloat64(), ok, a[trace.KeyDialMs].AsFloat64(), a[trace.KeyFirstByteMs].AsFloat64())
	}
}
