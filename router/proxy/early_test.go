package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/h3"
)

// earlyEcho is a backend answering with the Early-Data field it got.
func earlyEcho(t *testing.T) config.Backend {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "early-data="+r.Header.Get("Early-Data"))
	}))
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: host, Port: p, Weight: config.DefaultWeight, Name: "echo"}
}

// h3Front serves h on HTTP/3 with 0-RTT accepted; it returns a function
// sending GET (the first time) then GET_0RTT on fresh resumed
// connections, answering the body.
func h3Front(t *testing.T, h http.Handler) func(host string) string {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := h3.Listen(pc, h3.Options{Handler: h, TLS: ts.TLS.Clone(), Allow0RTT: true})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	cfg := &tls.Config{RootCAs: pool, ServerName: "example.com", ClientSessionCache: tls.NewLRUClientSessionCache(4)}
	first := true
	return func(host string) string {
		tr := &http3.Transport{
			TLSClientConfig: cfg,
			QUICConfig:      &quic.Config{HandshakeIdleTimeout: 2 * time.Second},
			Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, qcfg *quic.Config) (*quic.Conn, error) {
				return quic.DialAddrEarly(ctx, s.Addr().String(), tlsCfg, qcfg)
			},
		}
		defer tr.Close()
		method := http3.MethodGet0RTT
		if first {
			method, first = http.MethodGet, false
		}
		req, _ := http.NewRequest(method, "https://"+host+"/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d %q", method, host, resp.StatusCode, b)
		}
		return string(b)
	}
}

// A GET in 0-RTT on a route with earlyData is forwarded before the
// handshake completes, with Early-Data: 1 (RFC 8470 5.1); on a route
// without it the request waits for the handshake and the backend sees
// no Early-Data field.
func TestEarlyDataOptInForwardsWithEarlyDataHeader(t *testing.T) {
	if raceDetector {
		// quic-go's client (v0.65.0) races with itself when a request
		// opens its stream in 0-RTT while the handshake completes
		// (Conn.handleTransportParameters against newFlowController): a
		// data race in the test's client, not in Levee's server. CI runs
		// this test without the race detector (.ci/passes.sh, format).
		t.Skip("quic-go's 0-RTT client races with itself under the race detector")
	}
	h := newHarness(t, Options{})
	optIn := ep("optin", earlyEcho(t))
	optIn.EarlyData = true
	h.set(config.SourceDocker, optIn, ep("plain", earlyEcho(t)))
	get := h3Front(t, h.p)
	if b := get("optin.test"); b != "early-data=" {
		t.Fatalf("first connection (full handshake): %q", b)
	}
	sawEarly := false
	for range 6 {
		switch b := get("optin.test"); b {
		case "early-data=1":
			sawEarly = true
		case "early-data=":
		default:
			t.Fatalf("opt-in route: %q", b)
		}
		if b := get("plain.test"); b != "early-data=" {
			t.Errorf("default route forwarded an early request: %q", b)
		}
	}
	if !sawEarly {
		t.Error("no 0-RTT request on the opt-in route was forwarded early")
	}
}

// Over a real QUIC connection: a GET_0RTT on an earlyData route whose
// backend answers 425 to Early-Data: 1 gets the backend's real answer,
// sent again once the handshake completed (RFC 8470 5.2); a request that
// did not make it into early data reaches the backend once.
func TestTooEarlyOverQUIC(t *testing.T) {
	if raceDetector {
		t.Skip("quic-go's 0-RTT client races with itself under the race detector (see TestEarlyDataOptInForwardsWithEarlyDataHeader)")
	}
	h := newHarness(t, Options{})
	be := newTooEarlyBackend(t, nil)
	web := ep("web", be.backend())
	web.EarlyData = true
	h.set(config.SourceDocker, web)
	get := h3Front(t, h.p)
	const gets = 7
	for range gets {
		if b := get("web.test"); b != "real answer" {
			t.Fatalf("client got %q, want the backend's real answer", b)
		}
	}
	early, plain := 0, 0
	for _, r := range be.requests() {
		if len(r.earlyData) > 0 {
			early++
		} else {
			plain++
		}
	}
	if plain != gets || early == 0 {
		t.Fatalf("backend saw %d requests with Early-Data and %d without; want some, and %d", early, plain, gets)
	}
	if v := metricValue(t, h, "levee_retries_total", map[string]string{"route": "web", "reason": "too_early"}); v != float64(early) {
		t.Errorf("levee_retries_total{reason=too_early} = %v, want %d", v, early)
	}
}
