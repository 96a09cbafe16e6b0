package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/contrib/propagators/b3"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/levee-proxy/levee/router/proxy/trace"
)

// tracingConfig is the --tracing-* flags: OpenTelemetry tracing of the
// request path, exported over OTLP. An empty Endpoint is tracing off.
type tracingConfig struct {
	Endpoint    string
	Protocol    string
	SampleRatio float64
	Propagators string
	ServiceName string
	Insecure    bool
}

func (c *tracingConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Endpoint, "tracing-endpoint", "", "OTLP endpoint spans are exported to, host:port (gRPC, default port 4317) or host:port for HTTP (port 4318, path /v1/traces); empty: tracing off")
	fs.StringVar(&c.Protocol, "tracing-protocol", "grpc", "OTLP transport of --tracing-endpoint: grpc or http")
	fs.Float64Var(&c.SampleRatio, "tracing-sample-ratio", 1, "fraction of the requests without a sampled parent that are traced, 0 to 1; a request whose traceparent says sampled (or not) is traced (or not) as it says (parent-based)")
	fs.StringVar(&c.Propagators, "tracing-propagators", "tracecontext,baggage", "comma-separated context propagation formats read from requests and written to backends: tracecontext (W3C traceparent, tracestate), baggage (W3C), b3 (Zipkin's single b3 header)")
	fs.StringVar(&c.ServiceName, "tracing-service-name", "levee", "service.name resource attribute of Levee's spans")
	fs.BoolVar(&c.Insecure, "tracing-insecure", false, "export to --tracing-endpoint in plaintext (no TLS)")
}

// check reports the flags' errors.
func (c tracingConfig) check() error {
	var errs []error
	switch c.Protocol {
	case "grpc", "http":
	default:
		errs = append(errs, fmt.Errorf("--tracing-protocol (LEVEE_TRACING_PROTOCOL) %q: want grpc or http", c.Protocol))
	}
	if c.SampleRatio < 0 || c.SampleRatio > 1 {
		errs = append(errs, fmt.Errorf("--tracing-sample-ratio (LEVEE_TRACING_SAMPLE_RATIO) %v: want 0 to 1", c.SampleRatio))
	}
	if _, err := c.propagator(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// propagator is the composite of --tracing-propagators.
func (c tracingConfig) propagator() (propagation.TextMapPropagator, error) {
	var ps []propagation.TextMapPropagator
	for _, name := range strings.Split(c.Propagators, ",") {
		switch strings.TrimSpace(name) {
		case "tracecontext":
			ps = append(ps, propagation.TraceContext{})
		case "baggage":
			ps = append(ps, propagation.Baggage{})
		case "b3":
			ps = append(ps, b3.New(b3.WithInjectEncoding(b3.B3SingleHeader)))
		case "":
		default:
			return nil, fmt.Errorf("--tracing-propagators (LEVEE_TRACING_PROPAGATORS) %q: unknown %q, want tracecontext, baggage or b3", c.Propagators, name)
		}
	}
	return propagation.NewCompositeTextMapPropagator(ps...), nil
}

// start sets up the SDK (exporter, parent-based ratio sampler, resource)
// and returns the request path's tracer and the function that flushes
// and stops it; nil and a no-op when tracing is off.
func (c tracingConfig) start(ctx context.Context, version string) (*trace.Tracer, func(context.Context) error, error) {
	if c.Endpoint == "" {
		return nil, func(context.Context) error { return nil }, nil
	}
	prop, err := c.propagator()
	if err != nil {
		return nil, nil, err
	}
	var client otlptrace.Client
	if c.Protocol == "http" {
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(c.Endpoint)}
		if c.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		client = otlptracehttp.NewClient(opts...)
	} else {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(c.Endpoint)}
		if c.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		client = otlptracegrpc.NewClient(opts...)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, nil, fmt.Errorf("tracing exporter for %s (%s): %w", c.Endpoint, c.Protocol, err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(c.ServiceName), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(time.Second)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(c.SampleRatio))),
		sdktrace.WithResource(res))
	return trace.New(tp, prop), tp.Shutdown, nil
}
