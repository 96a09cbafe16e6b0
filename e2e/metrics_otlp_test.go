package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
)

// otlpMetricsReceiver is an OTLP/gRPC metrics receiver that keeps, for
// each counter point it is sent, the newest value by name and attributes.
type otlpMetricsReceiver struct {
	collectormetrics.UnimplementedMetricsServiceServer
	mu       sync.Mutex
	services map[string]bool
	sums     map[string]float64 // name{k=v,...} → value
}

func (r *otlpMetricsReceiver) Export(_ context.Context, req *collectormetrics.ExportMetricsServiceRequest) (*collectormetrics.ExportMetricsServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				r.services[kv.GetValue().GetStringValue()] = true
			}
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				for _, dp := range m.GetSum().GetDataPoints() {
					var labels []string
					for _, kv := range dp.GetAttributes() {
						labels = append(labels, kv.GetKey()+"="+kv.GetValue().GetStringValue())
					}
					r.sums[m.GetName()+"{"+strings.Join(labels, ",")+"}"] = dp.GetAsDouble()
				}
			}
		}
	}
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

// value is the newest value of series key, and whether one arrived.
func (r *otlpMetricsReceiver) value(key string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.sums[key]
	return v, ok
}

// waitFor polls until series key has value want, or fails after a
// deadline naming the series that did arrive.
func (r *otlpMetricsReceiver) waitFor(t *testing.T, key string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if v, ok := r.value(key); ok && v == want {
			return
		}
		if time.Now().After(deadline) {
			r.mu.Lock()
			defer r.mu.Unlock()
			var keys []string
			for k, v := range r.sums {
				if strings.HasPrefix(k, "levee_requests_total") {
					keys = append(keys, fmt.Sprintf("%s=%v", k, v))
				}
			}
			t.Fatalf("%s: want %v; levee_requests_total series received: %v", key, want, keys)
		}
		time.Sleep(20 * time.Millisecond) // polling the receiver, deadline above
	}
}

// Metrics over OTLP through the binary: with --metrics-otlp-endpoint the
// registry of /metrics arrives at an OTLP/gRPC collector every interval,
// under its Prometheus names and labels, with --tracing-service-name as
// service.name; SIGTERM exports once more, so a request answered just
// before it is counted.
func TestMetricsOTLPThroughTheBinary(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &otlpMetricsReceiver{services: map[string]bool{}, sums: map[string]float64{}}
	srv := grpc.NewServer()
	collectormetrics.RegisterMetricsServiceServer(srv, rcv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)

	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(backend.Close)
	p := startLevee(t, "--docker=false", "--metrics-otlp-endpoint", ln.Addr().String(), "--metrics-otlp-insecure",
		"--metrics-otlp-interval", "1s", "--tracing-service-name", "edge-otlp")
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"om","backends":[{"address":%q,"port":%s}],"config":{"hostnames":["om.test"]}}`, host, port))

	const series = "levee_requests_total{code=200,route=om}"
	if code, _, _ := send(t, p, "GET", "om.test", "/"); code != http.StatusOK {
		t.Fatalf("GET om.test/: %d", code)
	}
	rcv.waitFor(t, series, 1)
	rcv.mu.Lock()
	service := rcv.services["edge-otlp"]
	rcv.mu.Unlock()
	if !service {
		t.Errorf("service.name edge-otlp not among %v", rcv.services)
	}

	if code, _, _ := send(t, p, "GET", "om.test", "/"); code != http.StatusOK {
		t.Fatalf("GET om.test/: %d", code)
	}
	if err := p.signal(syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatalf("levee after SIGTERM: %v", err)
	}
	if v, _ := rcv.value(series); v != 2 {
		t.Errorf("%s after SIGTERM: %v, want 2", series, v)
	}
}
