package proxy

import (
	"context"
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

// grpcBackend answers every call with status, in trailers or, when
// trailersOnly, in the head alone.
func grpcBackend(t *testing.T, status string, trailersOnly bool) config.Backend {
	t.Helper()
	return newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		if trailersOnly {
			w.Header().Set("Grpc-Status", status)
			w.WriteHeader(200)
			return
		}
		w.WriteHeader(200)
		_, _ = w.Write([]byte("\x00\x00\x00\x00\x00"))
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", status)
	}).backend()
}

// The breaker reads grpc-status: UNAVAILABLE in trailers or in a
// Trailers-Only head is a failure and opens it, after which the client
// gets status 14 at once; OK and an application's NOT_FOUND are
// successes.
func TestBreakerJudgesGRPCStatus(t *testing.T) {
	h := newHarness(t, Options{})
	p := breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 10 * time.Second}
	h.set(config.SourceDocker,
		withBreaker(h2Route("trailers", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "14", false)), p),
		withBreaker(h2Route("head", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "14", true)), p),
		withBreaker(h2Route("ok", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "0", false)), p),
		withBreaker(h2Route("app", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "5", false)), p))
	base, c := grpcFront(t, h)
	for _, id := range []string{"trailers", "head", "ok", "app"} {
		for range 3 {
			resp := grpcCall(t, c, base, id+".test")
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
	}
	for id, want := range map[string]string{"trailers": "open", "head": "open", "ok": "closed", "app": "closed"} {
		if s := breakerState(t, h, id); s != want {
			t.Errorf("%s: breaker %s, want %s", id, s, want)
		}
	}
	st := routeGuard(t, h, "ok").Breaker().Stats()
	if st.Successes != 3 {
		t.Errorf("ok: %+v, want 3 successes", st)
	}
	resp := grpcCall(t, c, base, "trailers.test")
	resp.Body.Close()
	if resp.Header.Get("Grpc-Status") != "14" || resp.Header.Get(HeaderDiagnostic) != DiagnosticCircuitOpen {
		t.Errorf("open breaker: %v, want grpc-status 14 circuit-open", resp.Header)
	}
}

// With grpcFailureStatuses=none the status is not read: a failing gRPC
// backend is judged by its HTTP 200.
func TestBreakerGRPCStatusesNone(t *testing.T) {
	h := newHarness(t, Options{})
	e := withBreaker(h2Route("web", config.SchemeH2C, config.BackendTLS{}, grpcBackend(t, "14", false)), breaker.Params{MinRequests: 100, ConsecutiveFailures: 1, Cooldown: 10 * time.Second})
	e.CircuitBreaker.GRPCFailureStatuses = 0
	h.set(config.SourceDocker, e)
	base, c := grpcFront(t, h)
	for range 2 {
		resp := grpcCall(t, c, base, "web.test")
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Errorf("breaker %s, want closed", s)
	}
}

// A client that cancels a gRPC stream mid-way is neutral, and a stream
// the backend breaks before its trailers is a failure.
func TestGRPCStreamEndsJudged(t *testing.T) {
	h := newHarness(t, Options{})
	stream := func(breakIt bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/grpc")
			w.WriteHeader(200)
			_, _ = w.Write([]byte("\x00\x00\x00\x00\x00"))
			w.(http.Flusher).Flush()
			if breakIt {
				panic(http.ErrAbortHandler) // resets the stream
			}
			<-r.Context().Done()
		}
	}
	p := breaker.Params{MinRequests: 100, ConsecutiveFailures: 1, Cooldown: 10 * time.Second}
	h.set(config.SourceDocker,
		withBreaker(h2Route("cancel", config.SchemeH2C, config.BackendTLS{}, newH2Backend(t, false, stream(false)).backend()), p),
		withBreaker(h2Route("broken", config.SchemeH2C, config.BackendTLS{}, newH2Backend(t, false, stream(true)).backend()), p))
	base, c := grpcFront(t, h)

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/pkg.Service/Stream", strings.NewReader(""))
	req.Host = "cancel.test"
	req.Header.Set("Content-Type", "application/grpc")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("first message: %v", err)
	}
	cancel()
	resp.Body.Close()
	g := routeGuard(t, h, "cancel")
	eventually(t, "the cancelled stream reported", func() bool { return g.Breaker().Stats().Neutral == 1 })
	if st := g.Breaker().Stats(); st.State != breaker.Closed || st.Failures != 0 {
		t.Errorf("a client cancelling counted against the backend: %+v", st)
	}

	resp = grpcCall(t, c, base, "broken.test")
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	eventually(t, "the broken stream reported", func() bool { return breakerState(t, h, "broken") == "open" })
}
