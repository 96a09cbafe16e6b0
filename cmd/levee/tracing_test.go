package main

import (
	"context"
	"strings"
	"testing"
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
