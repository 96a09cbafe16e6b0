package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// ok answers every request 200 with a short body.
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })

// An HTTP/2 run counts 200s over h2, with latencies, and no error.
func TestH2RunCountsAnswers(t *testing.T) {
	srv := httptest.NewUnstartedServer(ok)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	rt, err := transport("h2", &tls.Config{InsecureSkipVerify: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	res := Run(context.Background(), Config{URL: srv.URL, Proto: "h2", Conns: 2, Streams: 3, Duration: 150 * time.Millisecond}, rt)
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("requests %d, errors %d (last: %v): want answers and no error", res.Requests, res.Errors, res.LastErr)
	}
	if res.P50 <= 0 || res.P99 < res.P50 {
		t.Errorf("p50 %v, p99 %v: want 0 < p50 <= p99", res.P50, res.P99)
	}
}

// An HTTP/3 run against a QUIC server counts its 200s, over -connect-to's
// address while the URL names another host.
func TestH3RunCountsAnswers(t *testing.T) {
	cert := httptest.NewTLSServer(ok) // for its certificate
	cert.Close()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http3.Server{Handler: ok, TLSConfig: http3.ConfigureTLSConfig(cert.TLS.Clone())}
	go func() { _ = srv.Serve(pc) }()
	t.Cleanup(func() { _ = srv.Close(); _ = pc.Close() })
	rt, err := transport("h3", &tls.Config{InsecureSkipVerify: true}, pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	res := Run(context.Background(), Config{URL: "https://bench.local/", Proto: "h3", Conns: 1, Streams: 4, Duration: 200 * time.Millisecond}, rt)
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("requests %d, errors %d (last: %v): want answers and no error", res.Requests, res.Errors, res.LastErr)
	}
}

// An answer in another protocol than the one asked for is an error: an
// HTTP/1.1 server asked for h2 answers nothing that counts.
func TestWrongProtocolIsAnError(t *testing.T) {
	srv := httptest.NewTLSServer(ok) // HTTP/1.1 only
	t.Cleanup(srv.Close)
	client := srv.Client()
	err := get(context.Background(), client, srv.URL, 2)
	if err == nil || !strings.Contains(err.Error(), "HTTP/1.1") {
		t.Fatalf("got %v, want an error naming HTTP/1.1", err)
	}
}

// An unknown protocol is refused by name.
func TestUnknownProtocol(t *testing.T) {
	if _, err := transport("h4", &tls.Config{}, ""); err == nil || !strings.Contains(err.Error(), "h4") {
		t.Fatalf("got %v, want an error naming h4", err)
	}
}
