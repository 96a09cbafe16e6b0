package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	promotel "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// The bounds of --metrics-otlp-interval, and the longest one export may
// take (shorter when the interval is: an export never outlasts its
// period).
const (
	minMetricsOTLPInterval = time.Second
	maxMetricsOTLPInterval = time.Hour
	maxMetricsOTLPTimeout  = 10 * time.Second
	// metricsOTLPLogEvery is how often a failing export is logged at most.
	metricsOTLPLogEvery = time.Minute
)

// metricsOTLPConfig is the --metrics-otlp-* flags: the Prometheus registry
// that /metrics serves, exported over OTLP too. An empty Endpoint is the
// export off.
type metricsOTLPConfig struct {
	Endpoint string
	Protocol string
	Interval time.Duration
	Insecure bool
}

func (c *metricsOTLPConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.Endpoint, "metrics-otlp-endpoint", "", "OTLP endpoint the metrics of /metrics are also exported to, host:port (gRPC, default port 4317) or host:port for HTTP (port 4318, path /v1/metrics); empty: no export")
	fs.StringVar(&c.Protocol, "metrics-otlp-protocol", "grpc", "OTLP transport of --metrics-otlp-endpoint: grpc or http")
	durationVar(fs, &c.Interval, "metrics-otlp-interval", 30*time.Second, "how often metrics are exported to --metrics-otlp-endpoint, 1s to 1h (each export is given at most the interval, and 10s)")
	fs.BoolVar(&c.Insecure, "metrics-otlp-insecure", false, "export to --metrics-otlp-endpoint in plaintext (no TLS)")
}

// check reports the flags' errors.
func (c metricsOTLPConfig) check() error {
	var errs []error
	switch c.Protocol {
	case "grpc", "http":
	default:
		errs = append(errs, fmt.Errorf("--metrics-otlp-protocol (LEVEE_METRICS_OTLP_PROTOCOL) %q: want grpc or http", c.Protocol))
	}
	if c.Interval < minMetricsOTLPInterval || c.Interval > maxMetricsOTLPInterval {
		errs = append(errs, fmt.Errorf("--metrics-otlp-interval (LEVEE_METRICS_OTLP_INTERVAL) %s: want %s to %s", c.Interval, minMetricsOTLPInterval, maxMetricsOTLPInterval))
	}
	return errors.Join(errs...)
}

// timeout is the deadline of one export.
func (c metricsOTLPConfig) timeout() time.Duration {
	return min(c.Interval, maxMetricsOTLPTimeout)
}

// start exports what gatherer gathers every Interval, from a goroutine
// of its own (the request path never waits for it), with the resource's
// service.name and service.version; the returned function exports once
// more and stops, within its context's deadline. A no-op when the export
// is off.
func (c metricsOTLPConfig) start(ctx context.Context, gatherer prometheus.Gatherer, serviceName, version string, log zerolog.Logger) (func(context.Context) error, error) {
	if c.Endpoint == "" {
		return func(context.Context) error { return nil }, nil
	}
	var exp sdkmetric.Exporter
	var err error
	if c.Protocol == "http" {
		opts := []otlpmetrichttp.Option{otlpmetrichttp.WithEndpoint(c.Endpoint), otlpmetrichttp.WithTimeout(c.timeout())}
		if c.Insecure {
			opts = append(opts, otlpmetrichttp.WithInsecure())
		}
		exp, err = otlpmetrichttp.New(ctx, opts...)
	} else {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(c.Endpoint), otlpmetricgrpc.WithTimeout(c.timeout())}
		if c.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		exp, err = otlpmetricgrpc.New(ctx, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP metrics exporter for %s (%s): %w", c.Endpoint, c.Protocol, err)
	}
	logged := &loggedExporter{Exporter: exp, endpoint: c.Endpoint, log: log, now: time.Now}
	reader := sdkmetric.NewPeriodicReader(logged,
		sdkmetric.WithInterval(c.Interval), sdkmetric.WithTimeout(c.timeout()),
		sdkmetric.WithProducer(promotel.NewMetricProducer(promotel.WithGatherer(gatherer))))
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(serviceName), semconv.ServiceVersion(version))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(res))
	return mp.Shutdown, nil
}

// loggedExporter logs failed exports, the first at once and then at most
// once every metricsOTLPLogEvery with the number failed since, and the
// first success after them. It answers nil to the reader, which would
// otherwise pass every failure to OpenTelemetry's global error handler,
// unthrottled; a failed flush at shutdown is logged as any other.
type loggedExporter struct {
	sdkmetric.Exporter
	endpoint string
	log      zerolog.Logger
	now      func() time.Time

	mu       sync.Mutex
	failed   int // since the last line logged
	failing  bool
	lastLine time.Time
}

func (e *loggedExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	err := e.Exporter.Export(ctx, rm)
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if err == nil {
		if e.failing {
			e.log.Info().Str("endpoint", e.endpoint).Msg("OTLP metrics export works again")
		}
		e.failing, e.failed = false, 0
		return nil
	}
	e.failed++
	if !e.failing || now.Sub(e.lastLine) >= metricsOTLPLogEvery {
		e.log.Warn().Err(err).Str("endpoint", e.endpoint).Int("failed", e.failed).Msg("OTLP metrics export failed")
		e.failing, e.failed, e.lastLine = true, 0, now
	}
	return nil
}
