package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// gRPC's own interop suite through the binary: grpc-go's interop test
// server is the backend, behind an h2c route (scheme=h2c) and an h2 route
// (scheme=h2, its certificate from a test CA for a name that is not its
// address), and its client cases run through Levee's TLS listener (h2 by
// ALPN) and through a plain listener with h2c. Every case must pass: the
// streaming kinds, trailers (status, message, metadata), deadlines and
// cancellation in both directions.
func TestGRPCInteropThroughTheBinary(t *testing.T) {
	grpclog.SetLoggerV2(panicLogger{})
	dir := t.TempDir()
	ca := newBackendCA(t, dir, "grpc-ca")
	cleartext := startInteropServer(t, nil)
	secure := startInteropServer(t, credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{ca.issue(t, "grpc.internal", x509.ExtKeyUsageServerAuth, "")},
	}))

	p := startLevee(t, "--docker=false", "--listen", "websecure=127.0.0.1:0,tls",
		"--listen", "grpc=127.0.0.1:0,h2c")
	tlsAddr, h2cAddr := p.listenerAddr("websecure"), p.listenerAddr("grpc")
	// The backend side of each route: scheme and, for h2, its TLS.
	type backend struct {
		port       int
		scheme     string
		backendTLS string
	}
	backends := map[string]backend{
		"h2c": {cleartext, "h2c", ""},
		"h2":  {secure, "h2", fmt.Sprintf(`"server_name":"grpc.internal","ca":%q`, filepath.Join(dir, "grpc-ca.pem"))},
	}
	for name, b := range backends {
		// One route per front: a tls=true route redirects plain HTTP.
		for front, clientTLS := range map[string]string{"plain": `"enabled":false`, "tls": `"enabled":true`} {
			tlsObj := clientTLS
			if b.backendTLS != "" {
				tlsObj += "," + b.backendTLS
			}
			createEntrypoint(t, p, fmt.Sprintf(`{"name":"%s-%s","backends":[{"address":"127.0.0.1","port":%d}],`+
				`"config":{"hostnames":["%s.%s.test"],"scheme":%q,"tls":{%s}}}`, name, front, b.port, name, front, b.scheme, tlsObj))
		}
	}

	fronts := map[string]func(host string) (*grpc.ClientConn, error){
		"h2c front": func(host string) (*grpc.ClientConn, error) {
			return grpc.NewClient("passthrough:///"+h2cAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithAuthority(host+".plain.test"))
		},
		"tls front": func(host string) (*grpc.ClientConn, error) {
			// Levee's default certificate: the test checks the path, not it.
			creds := credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, ServerName: host + ".tls.test"})
			return grpc.NewClient("passthrough:///"+tlsAddr, grpc.WithTransportCredentials(creds), grpc.WithAuthority(host+".tls.test"))
		},
	}
	for front, dial := range fronts {
		for scheme := range backends {
			t.Run(front+"/"+scheme+" backend", func(t *testing.T) {
				cc, err := dial(scheme)
				if err != nil {
					t.Fatal(err)
				}
				defer cc.Close()
				runInteropCases(t, cc)
			})
		}
	}
}

// runInteropCases runs the interop client's cases on cc, each with a
// deadline; a case's failure (the client's Fatal, made a panic by
// panicLogger) fails that case alone.
func runInteropCases(t *testing.T, cc *grpc.ClientConn) {
	tc := testgrpc.NewTestServiceClient(cc)
	cases := []struct {
		name string
		run  func(ctx context.Context)
	}{
		{"empty_unary", func(ctx context.Context) { interop.DoEmptyUnaryCall(ctx, tc) }},
		{"large_unary", func(ctx context.Context) { interop.DoLargeUnaryCall(ctx, tc) }},
		{"client_streaming", func(ctx context.Context) { interop.DoClientStreaming(ctx, tc) }},
		{"server_streaming", func(ctx context.Context) { interop.DoServerStreaming(ctx, tc) }},
		{"ping_pong", func(ctx context.Context) { interop.DoPingPong(ctx, tc) }},
		{"empty_stream", func(ctx context.Context) { interop.DoEmptyStream(ctx, tc) }},
		{"status_code_and_message", func(ctx context.Context) { interop.DoStatusCodeAndMessage(ctx, tc) }},
		{"special_status_message", func(ctx context.Context) { interop.DoSpecialStatusMessage(ctx, tc) }},
		{"custom_metadata", func(ctx context.Context) { interop.DoCustomMetadata(ctx, tc) }},
		{"unimplemented_method", func(ctx context.Context) { interop.DoUnimplementedMethod(ctx, cc) }},
		{"unimplemented_service", func(ctx context.Context) {
			interop.DoUnimplementedService(ctx, testgrpc.NewUnimplementedServiceClient(cc))
		}},
		{"timeout_on_sleeping_server", func(ctx context.Context) { interop.DoTimeoutOnSleepingServer(ctx, tc) }},
		{"cancel_after_begin", func(ctx context.Context) { interop.DoCancelAfterBegin(ctx, tc) }},
		{"cancel_after_first_response", func(ctx context.Context) { interop.DoCancelAfterFirstResponse(ctx, tc) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s through Levee: %v", c.name, r)
				}
			}()
			c.run(ctx)
		})
	}
}

// startInteropServer serves grpc-go's interop test service on loopback
// (TLS with creds, else cleartext HTTP/2) until the test ends, and
// returns its port.
func startInteropServer(t *testing.T, creds credentials.TransportCredentials) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	s := grpc.NewServer(opts...)
	testgrpc.RegisterTestServiceServer(s, interop.NewTestServer())
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().(*net.TCPAddr).Port
}

// panicLogger is gRPC's logger for the interop cases: their checks end
// in logger.Fatal, which would exit the test binary and leave Levee
// running; a panic is recovered by the case instead. Info is dropped,
// warnings and errors too (a case's failure says what it saw).
type panicLogger struct{}

func (panicLogger) Info(...any)                  {}
func (panicLogger) Infoln(...any)                {}
func (panicLogger) Infof(string, ...any)         {}
func (panicLogger) Warning(...any)               {}
func (panicLogger) Warningln(...any)             {}
func (panicLogger) Warningf(string, ...any)      {}
func (panicLogger) Error(...any)                 {}
func (panicLogger) Errorln(...any)               {}
func (panicLogger) Errorf(string, ...any)        {}
func (panicLogger) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (panicLogger) Fatalln(args ...any)          { panic(fmt.Sprint(args...)) }
func (panicLogger) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (panicLogger) V(int) bool                   { return false }

// A gRPC backend failing with UNAVAILABLE opens the route's breaker
// through the binary (its status comes in trailers, under HTTP 200), and
// the client then gets status 14 from Levee at once, with the diagnostic
// in the message; an application error (UNKNOWN) does not count.
func TestGRPCBreakerThroughTheBinary(t *testing.T) {
	grpclog.SetLoggerV2(panicLogger{})
	port := startInteropServer(t, nil)
	p := startLevee(t, "--docker=false", "--listen", "grpc=127.0.0.1:0,h2c")
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"api","backends":[{"address":"127.0.0.1","port":%d}],`+
		`"config":{"hostnames":["api.test"],"scheme":"h2c","circuit_breaker":{"consecutive_failures":2,"min_requests":100,"cooldown":"1m"}}}`, port))
	cc, err := grpc.NewClient("passthrough:///"+p.listenerAddr("grpc"), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority("api.test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)
	call := func(code codes.Code) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseStatus: &testgrpc.EchoStatus{Code: int32(code), Message: "backend says " + code.String()}})
		return err
	}
	for range 3 {
		if err := call(codes.Unknown); status.Code(err) != codes.Unknown {
			t.Fatalf("application error: %v, want the backend's UNKNOWN", err)
		}
	}
	for range 2 {
		if err := call(codes.Unavailable); status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "backend says") {
			t.Fatalf("failing backend: %v, want the backend's UNAVAILABLE", err)
		}
	}
	err = call(codes.OK)
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "upstream circuit open") {
		t.Fatalf("open breaker: %v, want Levee's UNAVAILABLE saying the circuit is open", err)
	}
}
