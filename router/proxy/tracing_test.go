package proxy

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/rs/zerolog"
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
func tracedRoute(t *testing.T, tr *trace.Tracer) *Handler {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Got", r.Header.Get("Traceparent"))
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	n, _ := strconv.Atoi(port)
	r := router.New(router.Options{Logger: zerolog.Nop()})
	t.Cleanup(r.Close)
	p := New(r, Options{Logger: zerolog.Nop(), Tracer: tr})
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

// With tracing on the backend gets the attempt span's traceparent, in
// the client's trace; the server span is the client span's child and the
// attempt span the server span's.
func TestTracingOnReplacesTraceparentWithTheAttempts(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	w := tracedGet(tracedRoute(t, trace.New(tp, propagation.TraceContext{})))
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
