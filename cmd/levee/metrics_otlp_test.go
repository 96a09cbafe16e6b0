package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/levee-proxy/levee/e2e/logbuf"
)

// metricsReceiver is an OTLP metrics receiver (the gRPC service, and the
// body of an HTTP POST /v1/metrics) that keeps every request it is sent.
type metricsReceiver struct {
	collectormetrics.UnimplementedMetricsServiceServer
	mu   sync.Mutex
	reqs []*collectormetrics.ExportMetricsServiceRequest
}

func (r *metricsReceiver) Export(_ context.Context, req *collectormetrics.ExportMetricsServiceRequest) (*collectormetrics.ExportMetricsServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

// exportedPoint is one data point of a metric as the receiver got it,
// with the resource's service.name and service.version.
type exportedPoint struct {
	service, version string
	sum              *metricspb.Sum
	value            float64
}

// last returns the newest point of metric name with label route=a, and
// whether there is one.
func (r *metricsReceiver) last(name string) (exportedPoint, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got exportedPoint
	found := false
	for _, req := range r.reqs {
		for _, rm := range req.GetResourceMetrics() {
			var p exportedPoint
			for _, kv := range rm.GetResource().GetAttributes() {
				switch kv.GetKey() {
				case "service.name":
					p.service = kv.GetValue().GetStringValue()
				case "service.version":
					p.version = kv.GetValue().GetStringValue()
				}
			}
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					if m.GetName() != name || m.GetSum() == nil {
						continue
					}
					for _, dp := range m.GetSum().GetDataPoints() {
						for _, kv := range dp.GetAttributes() {
							if kv.GetKey() == "route" && kv.GetValue().GetStringValue() == "a" {
								p.sum, p.value = m.GetSum(), dp.GetAsDouble()
								got, found = p, true
							}
						}
					}
				}
			}
		}
	}
	return got, found
}

// waitFor polls the receiver until metric name has value want, or fails
// after a deadline.
func (r *metricsReceiver) waitFor(t *testing.T, name string, want float64) exportedPoint {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		p, ok := r.last(name)
		if ok && p.value == want {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{route=a}: last exported %+v (found %v), want value %v", name, p, ok, want)
		}
		time.Sleep(20 * time.Millisecond) // polling the receiver, deadline above
	}
}

// countingRegistry is a registry with one counter, test_requests_total
// {route="a"}, at 3.
func countingRegistry(t *testing.T) (*prometheus.Registry, prometheus.Counter) {
	t.Helper()
	reg := prometheus.NewRegistry()
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "test_requests_total", Help: "requests"}, []string{"route"})
	reg.MustRegister(vec)
	c := vec.WithLabelValues("a")
	c.Add(3)
	return reg, c
}

func checkPoint(t *testing.T, p exportedPoint) {
	t.Helper()
	if p.service != "edge-1" || p.version != "dev" {
		t.Errorf("resource service.name %q, service.version %q: want edge-1, dev", p.service, p.version)
	}
	if !p.sum.GetIsMonotonic() || p.sum.GetAggregationTemporality() != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Errorf("sum monotonic %v, temporality %v: want a cumulative counter", p.sum.GetIsMonotonic(), p.sum.GetAggregationTemporality())
	}
}

// The --metrics-otlp-* flags are checked before serving: an unknown
// protocol, or an interval outside 1s to 1h, is an error naming the flag.
func TestMetricsOTLPFlagsChecked(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--metrics-otlp-endpoint", "collector:4317"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if cfg.MetricsOTLP != (metricsOTLPConfig{Endpoint: "collector:4317", Protocol: "grpc", Interval: 30 * time.Second}) {
		t.Errorf("defaults: %+v", cfg.MetricsOTLP)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--metrics-otlp-protocol", "udp"}, want: `--metrics-otlp-protocol (LEVEE_METRICS_OTLP_PROTOCOL) "udp": want grpc or http`},
		{args: []string{"--metrics-otlp-interval", "500ms"}, want: "--metrics-otlp-interval (LEVEE_METRICS_OTLP_INTERVAL) 500ms: want 1s to 1h0m0s"},
		{env: map[string]string{"LEVEE_METRICS_OTLP_INTERVAL": "2h"}, want: "--metrics-otlp-interval (LEVEE_METRICS_OTLP_INTERVAL) 2h0m0s: want 1s to 1h0m0s"},
		{args: []string{"--metrics-otlp-interval", "0"}, want: "--metrics-otlp-interval (LEVEE_METRICS_OTLP_INTERVAL) 0s"},
	} {
		_, err := parseServeFlags(c.args, envOf(c.env), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %v env %v: error %v, want it to mention %s", c.args, c.env, err, c.want)
		}
	}
	if _, err := parseServeFlags([]string{"--metrics-otlp-interval", "1h", "--metrics-otlp-protocol", "http"}, envOf(nil), &bytes.Buffer{}); err != nil {
		t.Errorf("1h over http: %v", err)
	}
}

// Without --metrics-otlp-endpoint nothing is exported and stop is a no-op.
func TestMetricsOTLPOffWithoutEndpoint(t *testing.T) {
	reg, _ := countingRegistry(t)
	stop, err := metricsOTLPConfig{Protocol: "grpc", Interval: time.Second}.start(context.Background(), reg, "levee", "dev", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Over OTLP/gRPC the registry's counter arrives every interval, by its
// Prometheus name, as a cumulative sum with the resource's service.name
// (--tracing-service-name) and service.version; stop exports once more,
// so the last value counted arrives too.
func TestMetricsOTLPExportsOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &metricsReceiver{}
	srv := grpc.NewServer()
	collectormetrics.RegisterMetricsServiceServer(srv, rcv)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	reg, counter := countingRegistry(t)
	cfg := metricsOTLPConfig{Endpoint: ln.Addr().String(), Protocol: "grpc", Interval: time.Second, Insecure: true}
	stop, err := cfg.start(context.Background(), reg, "edge-1", "dev", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	checkPoint(t, rcv.waitFor(t, "test_requests_total", 3)) // the periodic export

	counter.Add(2)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if p, ok := rcv.last("test_requests_total"); !ok || p.value != 5 {
		t.Fatalf("after stop, last exported %+v (found %v): want 5, flushed by stop", p, ok)
	}
}

// --metrics-otlp-protocol=http exports over OTLP/HTTP (POST /v1/metrics,
// protobuf) with the same content.
func TestMetricsOTLPExportsOverHTTP(t *testing.T) {
	rcv := &metricsReceiver{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req collectormetrics.ExportMetricsServiceRequest
		if r.Method != http.MethodPost || r.URL.Path != "/v1/metrics" || proto.Unmarshal(b, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		_, _ = rcv.Export(r.Context(), &req)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer hs.Close()

	reg, _ := countingRegistry(t)
	cfg := metricsOTLPConfig{Endpoint: strings.TrimPrefix(hs.URL, "http://"), Protocol: "http", Interval: time.Hour, Insecure: true}
	stop, err := cfg.start(context.Background(), reg, "edge-1", "dev", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	p, ok := rcv.last("test_requests_total")
	if !ok || p.value != 3 {
		t.Fatalf("exported %+v (found %v): want test_requests_total 3", p, ok)
	}
	checkPoint(t, p)
}

// A collector that accepts connections and never answers holds no one
// up: start returns at once, an export gives up after its timeout (the
// interval, here 1s) and is logged, and stop returns within its deadline.
func TestMetricsOTLPUnansweringCollector(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()

	reg, _ := countingRegistry(t)
	var logs syncBuffer
	cfg := metricsOTLPConfig{Endpoint: ln.Addr().String(), Protocol: "grpc", Interval: time.Second, Insecure: true}
	began := time.Now()
	stop, err := cfg.start(context.Background(), reg, "edge-1", "dev", zerolog.New(&logs))
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("start took %s with an unanswering collector", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	began = time.Now()
	_ = stop(ctx)
	if d := time.Since(began); d > 4*time.Second {
		t.Errorf("stop took %s, past its 3s deadline", d)
	}
	if !strings.Contains(logs.String(), `"message":"OTLP metrics export failed"`) || !strings.Contains(logs.String(), ln.Addr().String()) {
		t.Errorf("log %q: want the failed export, naming the endpoint", logs.String())
	}
}

// Failed exports are logged at once, then at most once a minute with the
// number failed since; the first success after them is logged too.
func TestMetricsOTLPFailuresLoggedRateLimited(t *testing.T) {
	var logs syncBuffer
	now := time.Unix(1000, 0)
	fake := &fakeExporter{}
	e := &loggedExporter{Exporter: fake, endpoint: "collector:4317", log: zerolog.New(&logs), now: func() time.Time { return now }}
	lines := func() []string { return strings.Split(strings.TrimSpace(logs.String()), "\n") }

	fake.err = errors.New("connection refused")
	for range 5 {
		if err := e.Export(context.Background(), &metricdata.ResourceMetrics{}); err != nil {
			t.Fatalf("Export answered %v: want nil, the failure logged here", err)
		}
		now = now.Add(10 * time.Second)
	}
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], `"failed":1`) || !strings.Contains(l[0], "connection refused") {
		t.Fatalf("after 5 failures in 50s: %q, want one line", l)
	}
	now = now.Add(20 * time.Second) // a minute since the line
	_ = e.Export(context.Background(), &metricdata.ResourceMetrics{})
	if l := lines(); len(l) != 2 || !strings.Contains(l[1], `"failed":5`) {
		t.Fatalf("a minute later: %q, want a second line counting 5 failures", l)
	}
	fake.err = nil
	_ = e.Export(context.Background(), &metricdata.ResourceMetrics{})
	_ = e.Export(context.Background(), &metricdata.ResourceMetrics{})
	if l := lines(); len(l) != 3 || !strings.Contains(l[2], "works again") {
		t.Fatalf("after success: %q, want one line saying so", l)
	}
	fake.err = errors.New("refused again")
	_ = e.Export(context.Background(), &metricdata.ResourceMetrics{})
	if l := lines(); len(l) != 4 || !strings.Contains(l[3], "refused again") {
		t.Fatalf("a new failure after a success: %q, want it logged at once", l)
	}
}

type fakeExporter struct {
	sdkmetric.Exporter
	err error
}

func (f *fakeExporter) Export(context.Context, *metricdata.ResourceMetrics) error { return f.err }

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer = logbuf.Buffer
