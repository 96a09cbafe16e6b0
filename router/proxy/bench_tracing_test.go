package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/proxy/trace"
)

// discardExporter drops the spans a batch processor hands it.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkServeHTTPTracing compares the request path with tracing off
// (a nil Tracer: the same as BenchmarkServeHTTP/no-breaker) and on, with
// every request sampled and with 1%.
func BenchmarkServeHTTPTracing(b *testing.B) {
	for _, c := range []struct {
		name  string
		ratio float64 // < 0: off
	}{{"off", -1}, {"on-100pct", 1}, {"on-1pct", 0.01}} {
		b.Run(c.name, func(b *testing.B) {
			var tr *trace.Tracer
			if c.ratio >= 0 {
				tp := sdktrace.NewTracerProvider(
					sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.ratio))),
					sdktrace.WithBatcher(discardExporter{}))
				b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				tr = trace.New(tp, propagation.TraceContext{})
			}
			r := router.New(router.Options{Logger: zerolog.Nop()})
			b.Cleanup(r.Close)
			p := New(r, Options{Logger: zerolog.Nop(), Tracer: tr})
			b.Cleanup(p.Close)
			r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep("bench", benchBackend(b))}})
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "http://bench.test/path?q=1", nil)
				req.RemoteAddr = "192.0.2.1:1234"
				clear(w.h)
				p.ServeHTTP(w, req)
			}
		})
	}
}
