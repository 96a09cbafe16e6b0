package e2e

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// healthyInteropServer is grpc-go's interop service with grpc-go's health
// service beside it, counting the interop calls it serves.
type healthyInteropServer struct {
	port   int
	health *health.Server
	calls  atomic.Int64
}

func startHealthyInteropServer(t *testing.T) *healthyInteropServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &healthyInteropServer{port: ln.Addr().(*net.TCPAddr).Port, health: health.NewServer()}
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod != "/grpc.health.v1.Health/Check" {
			hs.calls.Add(1)
		}
		return h(ctx, req)
	}))
	testgrpc.RegisterTestServiceServer(s, interop.NewTestServer())
	healthpb.RegisterHealthServer(s, hs.health)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return hs
}

// healthCheck.grpc through the binary: a backend whose health service
// says NOT_SERVING for the checked service leaves rotation (its peer
// takes every call) and comes back once it says SERVING. The probe's
// timeout is generous: a loaded machine must not fail the healthy one
// (both down would fail open).
func TestGRPCHealthCheckThroughTheBinary(t *testing.T) {
	grpclog.SetLoggerV2(panicLogger{})
	const service = "grpc.testing.TestService"
	sick, well := startHealthyInteropServer(t), startHealthyInteropServer(t)
	sick.health.SetServingStatus(service, healthpb.HealthCheckResponse_NOT_SERVING)
	well.health.SetServingStatus(service, healthpb.HealthCheckResponse_SERVING)
	p := startLevee(t, "--docker=false", "--listen", "grpc=127.0.0.1:0,h2c")
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"api","backends":[{"address":"127.0.0.1","port":%d},{"address":"127.0.0.1","port":%d}],`+
		`"config":{"hostnames":["api.test"],"scheme":"h2c","health_check":{"grpc":true,"grpc_service":%q,"interval":"1s","timeout":"1s","rise":1,"fall":1}}}`,
		sick.port, well.port, service))
	sickAddr := fmt.Sprintf("127.0.0.1:%d", sick.port)
	event := func(name string) func(map[string]any) bool {
		return func(l map[string]any) bool { return l["event"] == name && l["backend"] == sickAddr }
	}
	p.waitLog(10*time.Second, event("backend_down"))

	cc, err := grpc.NewClient("passthrough:///"+p.listenerAddr("grpc"), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("api.test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := tc.EmptyCall(ctx, &testgrpc.Empty{})
		cancel()
		if err != nil {
			t.Fatalf("call with one backend healthy: %v", err)
		}
	}
	if n := sick.calls.Load(); n != 0 {
		t.Fatalf("the NOT_SERVING backend served %d calls", n)
	}
	if n := well.calls.Load(); n != 10 {
		t.Fatalf("the SERVING backend served %d calls, want 10", n)
	}

	sick.health.SetServingStatus(service, healthpb.HealthCheckResponse_SERVING)
	p.waitLog(10*time.Second, event("backend_up"))
}
