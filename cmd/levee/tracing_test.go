package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The --tracing-* flags are checked before serving: an unknown protocol
// or propagator, or a ratio outside [0, 1], is an error naming the flag.
func TestTracingFlagsChecked(t *testing.T) {
	ok := tracingConfig{Protocol: "grpc", SampleRatio: 1, Propagators: "tracecontext,baggage,b3"}
	if err := ok.check(); err != nil {
		t.Fatalf("valid flags: %v", err)
	}
	for _, c := range []struct {
		cfg  tracingConfig
		flag string
	}{
		{tracingConfig{Protocol: "udp", SampleRatio: 1, Propagators: "tracecontext"}, "--tracing-protocol"},
		{tracingConfig{Protocol: "http", SampleRatio: 1.5, Propagators: "tracecontext"}, "--tracing-sample-ratio"},
		{tracingConfig{Protocol: "http", SampleRatio: 0.5, Propagators: "tracecontext,jaeger"}, "--tracing-propagators"},
	} {
		err := c.cfg.check()
		if err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("%+v: error %v, want one naming %s", c.cfg, err, c.flag)
		}
	}
}

// Without --tracing-endpoint there is no tracer: the request path's
// tracing is off.
func TestTracingOffWithoutEndpoint(t *testing.T) {
	tr, stop, err := tracingConfig{Protocol: "grpc", SampleRatio: 1, Propagators: "tracecontext"}.start(context.Background(), "dev")
	if err != nil || tr != nil {
		t.Fatalf("tracer %v, err %v: want nil, nil", tr, err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// --tracing-protocol=http exports over OTLP/HTTP (POST /v1/traces,
// protobuf) with the resource's service.name, and the stop function
// flushes what was batched.
func TestTracingExportsOverHTTP(t *testing.T) {
	got := make(chan *collectortrace.ExportTraceServiceRequest, 4)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		got <- &req
	}))
	defer rcv.Close()
	cfg := tracingConfig{Endpoint: strings.TrimPrefix(rcv.URL, "http://"), Protocol: "http", SampleRatio: 1,
		Propagators: "tracecontext", ServiceName: "edge-1", Insecure: true}
	tr, stop, err := cfg.start(context.Background(), "dev")
	if err != nil || tr == nil {
		t.Fatalf("start: %v, %v", tr, err)
	}
	tr.StartServer(httptest.NewRequest(http.MethodGet, "http://a.test/", nil), "web", false).End(200, "", false)
	if err := stop(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	select {
	case req := <-got:
		rs := req.GetResourceSpans()
		if len(rs) != 1 || len(rs[0].GetScopeSpans()) != 1 || len(rs[0].GetScopeSpans()[0].GetSpans()) != 1 {
			t.Fatalf("export: %v", req)
		}
		var service string
		for _, kv := range rs[0].GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		if service != "edge-1" {
			t.Errorf("service.name %q, want edge-1", service)
		}
	default:
		t.Fatal("nothing was exported by the time stop returned")
	}
}
