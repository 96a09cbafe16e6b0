package e2e

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// otlpReceiver is an OTLP/gRPC trace receiver that keeps every span it
// is sent, with its service's name.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, receivedSpan{service: service, span: s})
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// trace waits until the receiver holds n spans of the trace and returns
// them.
func (r *otlpReceiver) trace(t *testing.T, traceID string, n int) []receivedSpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		var got []receivedSpan
		for _, s := range r.spans {
			if hex.EncodeToString(s.span.GetTraceId()) == traceID {
				got = append(got, s)
			}
		}
		r.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("trace %s: %d spans, want %d: %v", traceID, len(got), n, describe(got))
			}
			return got
		}
		time.Sleep(20 * time.Millisecond) // polling the receiver, deadline above
	}
}

func describe(ss []receivedSpan) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%s/%s(%s) id=%x parent=%x", s.service, s.span.GetName(), s.span.GetKind(), s.span.GetSpanId(), s.span.GetParentSpanId()))
	}
	return out
}

func attr(s *tracepb.Span, key string) *commonpb.AnyValue {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return kv.GetValue()
		}
	}
	return nil
}

// startReceiver serves an OTLP/gRPC receiver on a loopback port.
func startReceiver(t *testing.T) (*otlpReceiver, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &otlpReceiver{}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, rcv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return rcv, ln.Addr().String()
}

// tracedBackend is a backend that continues the trace its request
// carries (W3C Trace Context) in a span of its own, exported to the
// receiver at once, and answers 502 to the first request to /retry.
func tracedBackend(t *testing.T, endpoint string, failedRetry *atomic.Bool) *httptest.Server {
	t.Helper()
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(sdkresource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("backend"))))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracer := tp.Tracer("e2e-backend")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		_, span := tracer.Start(ctx, "backend "+r.URL.Path, oteltrace.WithSpanKind(oteltrace.SpanKindServer))
		defer span.End()
		w.Header().Set("X-Got-Traceparent", r.Header.Get("Traceparent"))
		if r.URL.Path == "/retry" && failedRetry.CompareAndSwap(false, true) {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Tracing through the binary: a request carrying a traceparent gives one
// trace in which Levee's server span is the client's span's child, each
// backend attempt is a client span under it (a retry is a sibling) and
// the backend's own span is its attempt's child; a request the route's
// open breaker refuses shows the breaker's state and decision. The JSON
// access log names the trace.
func TestTracingThroughTheBinary(t *testing.T) {
	rcv, endpoint := startReceiver(t)
	var failedRetry atomic.Bool
	a := tracedBackend(t, endpoint, &failedRetry)
	b := tracedBackend(t, endpoint, &failedRetry)
	c := tracedBackend(t, endpoint, &failedRetry)
	p := startLevee(t, "--docker=false", "--tracing-endpoint", endpoint, "--tracing-protocol", "grpc", "--tracing-insecure",
		// The test client is the peer whose traceparent Levee continues.
		"--trusted-proxies", "127.0.0.1/32")

	backendJSON := func(srvs ...*httptest.Server) string {
		var parts []string
		for _, s := range srvs {
			host, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
			parts = append(parts, fmt.Sprintf(`{"address":%q,"port":%s}`, host, port))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	createEntrypoint(t, p, `{"name":"tr","backends":`+backendJSON(a)+`,"config":{"hostnames":["tr.test"]}}`)
	createEntrypoint(t, p, `{"name":"trretry","backends":`+backendJSON(a, b)+`,"config":{"hostnames":["retry.test"],"retry":{"attempts":2}}}`)
	createEntrypoint(t, p, `{"name":"trdial","backends":`+backendJSON(c)+`,"config":{"hostnames":["dial.test"]}}`)
	createEntrypoint(t, p, `{"name":"trbrk","backends":`+backendJSON(a)+`,"config":{"hostnames":["brk.test"],"circuit_breaker":{"min_requests":100,"cooldown":"5m"}}}`)
	if code, body := apiCall(t, p, "POST", "/breakers/trbrk/open", "", ""); code != http.StatusOK {
		t.Fatalf("POST /breakers/trbrk/open: %d %s", code, body)
	}

	const clientSpan = "00f067aa0ba902b7"
	traceparent := func(traceID string) string { return "00-" + traceID + "-" + clientSpan + "-01" }

	t.Run("one attempt", func(t *testing.T) {
		const id = "4bf92f3577b34da6a3ce929d0e0e4736"
		code, h, _ := send(t, p, "GET", "tr.test", "/hello", "Traceparent", traceparent(id))
		if code != http.StatusOK {
			t.Fatalf("GET tr.test/hello: %d", code)
		}
		spans := rcv.trace(t, id, 3)
		server, attempts, backends := split(t, spans)
		if len(attempts) != 1 || len(backends) != 1 {
			t.Fatalf("want one attempt and one backend span: %v", describe(spans))
		}
		if got := hex.EncodeToString(server.GetParentSpanId()); got != clientSpan {
			t.Errorf("server span's parent %s, want the client's span %s", got, clientSpan)
		}
		if attr(server, "levee.route").GetStringValue() != "tr" || attr(server, "http.response.status_code").GetIntValue() != 200 {
			t.Errorf("server span attributes: %v", server.GetAttributes())
		}
		at := attempts[0]
		if !equalID(at.GetParentSpanId(), server.GetSpanId()) || !equalID(backends[0].GetParentSpanId(), at.GetSpanId()) {
			t.Errorf("want client → server → attempt → backend: %v", describe(spans))
		}
		// The backend got Levee's attempt span as its parent, not the
		// client's span.
		want := "00-" + id + "-" + hex.EncodeToString(at.GetSpanId()) + "-01"
		if got := h.Get("X-Got-Traceparent"); got != want {
			t.Errorf("backend's traceparent %q, want %q", got, want)
		}
		p.waitLog(5*time.Second, func(m map[string]any) bool { return m["event"] == "access" && m["trace_id"] == id })
	})

	t.Run("retry", func(t *testing.T) {
		const id = "5bf92f3577b34da6a3ce929d0e0e4737"
		if code, _, _ := send(t, p, "GET", "retry.test", "/retry", "Traceparent", traceparent(id)); code != http.StatusOK {
			t.Fatalf("GET retry.test/retry: %d, want 200 after a retry", code)
		}
		spans := rcv.trace(t, id, 5)
		server, attempts, backends := split(t, spans)
		if len(attempts) != 2 || len(backends) != 2 {
			t.Fatalf("want two attempts and two backend spans: %v", describe(spans))
		}
		statuses := map[int64]int64{}
		for _, at := range attempts {
			if !equalID(at.GetParentSpanId(), server.GetSpanId()) {
				t.Errorf("attempt %x is not the server span's child (siblings): %v", at.GetSpanId(), describe(spans))
			}
			statuses[attr(at, "levee.attempt").GetIntValue()] = attr(at, "http.response.status_code").GetIntValue()
			children := 0
			for _, bs := range backends {
				if equalID(bs.GetParentSpanId(), at.GetSpanId()) {
					children++
				}
			}
			if children != 1 {
				t.Errorf("attempt %x has %d backend spans, want 1", at.GetSpanId(), children)
			}
		}
		if statuses[1] != 502 || statuses[2] != 200 {
			t.Errorf("attempts' statuses %v, want 1:502 2:200", statuses)
		}
	})

	t.Run("dial and first byte", func(t *testing.T) {
		// Two requests to a backend nothing has connected to yet: the
		// first attempt dials, the second reuses the pooled connection.
		ids := []string{"7bf92f3577b34da6a3ce929d0e0e4739", "8bf92f3577b34da6a3ce929d0e0e473a"}
		for _, id := range ids {
			if code, _, _ := send(t, p, "GET", "dial.test", "/d", "Traceparent", traceparent(id)); code != http.StatusOK {
				t.Fatalf("GET dial.test/d: %d", code)
			}
		}
		var at []*tracepb.Span
		for _, id := range ids {
			_, attempts, _ := split(t, rcv.trace(t, id, 3))
			if len(attempts) != 1 {
				t.Fatalf("trace %s: %d attempts, want 1", id, len(attempts))
			}
			at = append(at, attempts[0])
		}
		backend := strings.TrimPrefix(c.URL, "http://")
		for i, s := range at {
			if got := attr(s, "levee.backend").GetStringValue(); got != backend {
				t.Errorf("attempt %d: levee.backend %q, want %q", i, got, backend)
			}
			if fb := attr(s, "levee.first_byte_ms"); fb == nil || fb.GetDoubleValue() <= 0 {
				t.Errorf("attempt %d: levee.first_byte_ms %v, want > 0", i, fb)
			}
		}
		dial, fb := attr(at[0], "levee.dial_ms"), attr(at[0], "levee.first_byte_ms").GetDoubleValue()
		if dial == nil || dial.GetDoubleValue() <= 0 || dial.GetDoubleValue() > fb {
			t.Errorf("first attempt: levee.dial_ms %v, want in (0, first byte %v]", dial, fb)
		}
		if r := attr(at[0], "levee.connection.reused"); r == nil || r.GetBoolValue() {
			t.Errorf("first attempt: levee.connection.reused %v, want false", r)
		}
		var events []string
		for _, e := range at[0].GetEvents() {
			events = append(events, e.GetName())
		}
		if strings.Join(events, ",") != "connected,first byte" {
			t.Errorf("first attempt's events %q, want [connected first byte]", events)
		}
		if r := attr(at[1], "levee.connection.reused"); !r.GetBoolValue() || attr(at[1], "levee.dial_ms") != nil {
			t.Errorf("second attempt: levee.connection.reused %v, dial_ms %v: want a pooled connection, no dial", r, attr(at[1], "levee.dial_ms"))
		}
	})

	t.Run("breaker open", func(t *testing.T) {
		const id = "6bf92f3577b34da6a3ce929d0e0e4738"
		if code, _, _ := send(t, p, "GET", "brk.test", "/x", "Traceparent", traceparent(id)); code != http.StatusServiceUnavailable {
			t.Fatalf("GET brk.test/x: %d, want 503 (breaker open)", code)
		}
		spans := rcv.trace(t, id, 1)
		s := spans[0].span
		if s.GetKind() != tracepb.Span_SPAN_KIND_SERVER || attr(s, "levee.breaker.decision").GetStringValue() != "rejected" ||
			attr(s, "levee.breaker.state").GetStringValue() != "open" || attr(s, "http.response.status_code").GetIntValue() != 503 ||
			attr(s, "levee.diagnostic").GetStringValue() != "circuit-open" {
			t.Errorf("refused request's span: %v", s.GetAttributes())
		}
		if s.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
			t.Errorf("refused request's span status %v, want error", s.GetStatus())
		}
	})
}

// split sorts a trace's spans: Levee's server span (exactly one), its
// attempt spans and the backend's spans.
func split(t *testing.T, spans []receivedSpan) (*tracepb.Span, []*tracepb.Span, []*tracepb.Span) {
	t.Helper()
	var server *tracepb.Span
	var attempts, backends []*tracepb.Span
	for _, s := range spans {
		switch {
		case s.service == "backend":
			backends = append(backends, s.span)
		case s.service == "levee" && s.span.GetKind() == tracepb.Span_SPAN_KIND_SERVER:
			if server != nil {
				t.Fatalf("two Levee server spans: %v", describe(spans))
			}
			server = s.span
		case s.service == "levee" && s.span.GetKind() == tracepb.Span_SPAN_KIND_CLIENT:
			attempts = append(attempts, s.span)
		default:
			t.Fatalf("unexpected span: %v", describe([]receivedSpan{s}))
		}
	}
	if server == nil {
		t.Fatalf("no Levee server span: %v", describe(spans))
	}
	return server, attempts, backends
}

func equalID(a, b []byte) bool { return len(a) > 0 && hex.EncodeToString(a) == hex.EncodeToString(b) }
