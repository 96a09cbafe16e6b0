package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// grpcFront serves the harness's proxy over cleartext HTTP/2, as an h2c
// listener does, and returns a client speaking it.
func grpcFront(t *testing.T, h *harness) (string, *http.Client) {
	t.Helper()
	srv := httptest.NewUnstartedServer(h.p)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	t.Cleanup(srv.Close)
	var cp http.Protocols
	cp.SetUnencryptedHTTP2(true)
	return srv.URL, &http.Client{Transport: &http.Transport{Protocols: &cp}, Timeout: 10 * time.Second}
}

func grpcCall(t *testing.T, c *http.Client, base, host string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/pkg.Service/Method", strings.NewReader("\x00\x00\x00\x00\x00"))
	req.Host = host
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("Te", "trailers")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", host, err)
	}
	return resp
}

// Levee's own answers to a gRPC call are Trailers-Only gRPC answers: an
// open breaker and no backend are UNAVAILABLE (with the retry pushback),
// no route UNIMPLEMENTED; the diagnostic is kept.
func TestOwnAnswersToGRPCAreGRPC(t *testing.T) {
	h := newHarness(t, Options{})
	open := withBreaker(ep("open", deadBackend(t)), breaker.Params{MinRequests: 100, ConsecutiveFailures: 1, Cooldown: 10 * time.Second})
	h.set(config.SourceDocker, open, ep("down", deadBackend(t)))
	base, c := grpcFront(t, h)
	_ = grpcCall(t, c, base, "open.test").Body.Close() // trips the breaker
	for _, tc := range []struct {
		host, status, diagnostic, pushback string
	}{
		{"open.test", "14", DiagnosticCircuitOpen, "10000"},
		{"down.test", "14", DiagnosticNoHealthyBackend, "1000"},
		{"nothing.test", "12", DiagnosticNoRoute, ""},
	} {
		resp := grpcCall(t, c, base, tc.host)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		hd := resp.Header
		if resp.StatusCode != 200 || hd.Get("Content-Type") != "application/grpc" || hd.Get("Grpc-Status") != tc.status || len(body) != 0 {
			t.Errorf("%s: %d %v %q, want 200 application/grpc grpc-status %s and no body", tc.host, resp.StatusCode, hd, body, tc.status)
		}
		if hd.Get(HeaderDiagnostic) != tc.diagnostic || hd.Get("Grpc-Retry-Pushback-Ms") != tc.pushback || hd.Get("Grpc-Message") == "" {
			t.Errorf("%s: %v, want diagnostic %s, pushback %q and a message", tc.host, hd, tc.diagnostic, tc.pushback)
		}
		if m, err := url.PathUnescape(hd.Get("Grpc-Message")); err != nil || strings.ContainsAny(hd.Get("Grpc-Message"), "\n") || m == "" {
			t.Errorf("%s: grpc-message %q not percent-encoded", tc.host, hd.Get("Grpc-Message"))
		}
	}
	// A plain request to the same route is still answered in HTTP.
	if code, _, resp := h.get("down.test", "/"); code != http.StatusServiceUnavailable || resp.Header.Get("Grpc-Status") != "" {
		t.Errorf("plain request: %d %v, want a plain 503", code, resp.Header)
	}
}

func TestGRPCMessageIsPercentEncoded(t *testing.T) {
	if got := grpcMessage("503 50% down\n☺"); got != "503 50%25 down%0A%E2%98%BA" {
		t.Errorf("grpcMessage = %q", got)
	}
}
