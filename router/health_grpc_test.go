package router

import (
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/levee-proxy/levee/e2e/poll"
	"github.com/levee-proxy/levee/router/config"
)

// A route with gRPC health checks takes a backend out of rotation while
// grpc-go's own health service says NOT_SERVING, and back once SERVING.
func TestGRPCHealthCheckTakesBackendsOutAndBack(t *testing.T) {
	r := New(Options{DialTimeout: time.Second})
	defer r.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	host, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	ep := route("g", "/", "g.test")
	ep.Scheme = config.SchemeH2C
	ep.Backends = []config.Backend{{Address: host, Port: p, Weight: config.DefaultWeight}}
	hc := config.DefaultHealthCheck()
	hc.GRPC, hc.GRPCService = true, "shop.Cart"
	hc.Interval, hc.Timeout, hc.Rise, hc.Fall = 200*time.Millisecond, 200*time.Millisecond, 1, 1
	ep.HealthCheck = &hc
	hs.SetServingStatus("shop.Cart", healthpb.HealthCheckResponse_NOT_SERVING)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})
	down := func() bool {
		rt, ok := r.Snapshot().Route("g")
		return ok && rt.Backends()[0].State().Down()
	}
	poll.Until(t, 10*time.Second, "backend down while NOT_SERVING", down)
	hs.SetServingStatus("shop.Cart", healthpb.HealthCheckResponse_SERVING)
	poll.Until(t, 10*time.Second, "backend up once SERVING", func() bool { return !down() })
}
