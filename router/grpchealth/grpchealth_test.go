package grpchealth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// startHealthServer serves grpc-go's own health service (h2c when creds
// is nil) and returns its address and the service to toggle.
func startHealthServer(t *testing.T, creds credentials.TransportCredentials) (string, *health.Server) {
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
	hs := health.NewServer()
	healthpb.RegisterHealthServer(s, hs)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String(), hs
}

func TestGRPCProbeReadsTheHealthService(t *testing.T) {
	trs := &Transports{DialTimeout: time.Second}
	defer trs.CloseIdle()
	addr, hs := startHealthServer(t, nil)
	probe := NewProbe(trs, false, nil, nil)
	check := func(service string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return probe.Check(ctx, addr, service, 2*time.Second)
	}
	hs.SetServingStatus("shop.Cart", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("shop.Orders", healthpb.HealthCheckResponse_NOT_SERVING)
	for _, c := range []struct {
		service string
		want    string // "" = SERVING, else a part of the error
	}{
		{"", ""}, // grpc-go's server is SERVING as a whole at start
		{"shop.Cart", ""},
		{"shop.Orders", "status 2, not SERVING"},
		{"shop.Unknown", `grpc-status "5"`}, // NOT_FOUND
	} {
		err := check(c.service)
		if c.want == "" && err != nil {
			t.Errorf("service %q: %v, want SERVING", c.service, err)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("service %q: %v, want an error with %q", c.service, err, c.want)
		}
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if err := check(""); err == nil || !strings.Contains(err.Error(), "not SERVING") {
		t.Errorf("server NOT_SERVING: %v, want not SERVING", err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	if err := check(""); err != nil {
		t.Errorf("server SERVING again: %v", err)
	}
}

func TestGRPCProbeOverTLS(t *testing.T) {
	trs := &Transports{DialTimeout: time.Second}
	defer trs.CloseIdle()
	cert, pool := selfSignedLoopback(t)
	addr, _ := startHealthServer(t, credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := NewProbe(trs, true, &tls.Config{RootCAs: pool}, nil).Check(ctx, addr, "", time.Second); err != nil {
		t.Fatalf("h2 probe with the right CA: %v", err)
	}
	if err := NewProbe(trs, true, &tls.Config{}, nil).Check(ctx, addr, "", time.Second); err == nil {
		t.Fatal("h2 probe trusting the system roots passed against a self-signed backend")
	}
	// A cleartext probe against a TLS backend is no answer.
	if err := NewProbe(trs, false, nil, nil).Check(ctx, addr, "", time.Second); err == nil {
		t.Fatal("h2c probe of a TLS backend passed")
	}
}

// A backend that accepts and never answers fails the check within the
// timeout; one that is not there, or whose TLS is unusable, at once.
func TestGRPCProbeFailsSilentAndForeignBackends(t *testing.T) {
	trs := &Transports{DialTimeout: time.Second}
	defer trs.CloseIdle()
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
			defer c.Close() // held open, never answered
		}
	}()
	probe := NewProbe(trs, false, nil, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := probe.Check(ctx, ln.Addr().String(), "", 300*time.Millisecond); err == nil {
		t.Fatal("a silent backend passed")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("silent backend judged after %v", d)
	}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	gone := closed.Addr().String()
	_ = closed.Close()
	if err := probe.Check(context.Background(), gone, "", time.Second); err == nil {
		t.Fatal("a backend that is not there passed")
	}
	if err := NewProbe(trs, true, nil, errTestTLS).Check(context.Background(), gone, "", time.Second); err == nil ||
		!strings.Contains(err.Error(), "backend TLS") {
		t.Fatalf("unusable backend TLS: %v", err)
	}
}

var errTestTLS = errorString("bad CA file")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestGRPCHealthRequestAndStatusWire(t *testing.T) {
	// HealthCheckRequest{service: "a.B"}: tag 0x0a, length 3.
	if got, want := healthRequest("a.B"), []byte{0, 0, 0, 0, 5, 0x0a, 3, 'a', '.', 'B'}; string(got) != string(want) {
		t.Fatalf("request %x, want %x", got, want)
	}
	if got := healthRequest(""); string(got) != "\x00\x00\x00\x00\x00" {
		t.Fatalf("empty request %x", got)
	}
	for _, c := range []struct {
		frame  string
		status uint64
		bad    bool
	}{
		{"\x00\x00\x00\x00\x02\x08\x01", 1, false},
		{"\x00\x00\x00\x00\x00", 0, false},                  // UNKNOWN
		{"\x00\x00\x00\x00\x05\x12\x01x\x08\x02", 2, false}, // an unknown field skipped
		{"\x01\x00\x00\x00\x02\x08\x01", 0, true},           // compressed
		{"\x00\x00\x00\x00\x09\x08\x01", 0, true},           // short
		{"\x00\x00\x00", 0, true},                           // no prefix
		{"\x00\x00\x00\x00\x02\x08\xff", 0, true},           // broken varint
	} {
		st, err := healthStatus([]byte(c.frame))
		if (err != nil) != c.bad || st != c.status {
			t.Errorf("frame %q: status %d err %v, want %d bad=%v", c.frame, st, err, c.status, c.bad)
		}
	}
}

// A route with healthCheck.grpc takes a backend out of rotation while its
// health service says NOT_SERVING and back once it says SERVING.
// selfSignedLoopback is a certificate for 127.0.0.1 and a pool trusting it.
func selfSignedLoopback(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "grpc-health-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
