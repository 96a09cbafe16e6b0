package proxy

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/levee-proxy/levee/router/config"
)

// refusingH2 is an h2c backend that resets every stream with
// REFUSED_STREAM, counting them.
func refusingH2(t *testing.T) (config.Backend, *atomic.Int32) {
	t.Helper()
	streams := new(atomic.Int32)
	b := hostileH2(t, nil, func(fr *http2.Framer, _ *headerBlock, stream uint32) {
		streams.Add(1)
		_ = fr.WriteRSTStream(stream, http2.ErrCodeRefusedStream)
	})
	return b, streams
}

// A backend that refuses every stream, and no other: 503
// backend-refused-stream with a Retry-After, well within a second or two
// (not the HTTP/2 client's minute of tries), logged with the backend and
// the reason.
func TestH2BackendRefusingEveryStreamIs503(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	b, streams := refusingH2(t)
	h.set(config.SourceDocker, h2Route("refusing", config.SchemeH2C, config.BackendTLS{}, b))
	start := time.Now()
	code, _, resp := h.get("refusing.test", "/")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("answered after %v", d)
	}
	if code != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendRefusedStream ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("got %d %q Retry-After %q, want 503 %s with a Retry-After",
			code, resp.Header.Get(HeaderDiagnostic), resp.Header.Get("Retry-After"), DiagnosticBackendRefusedStream)
	}
	if n := streams.Load(); n != 2 {
		t.Fatalf("the backend saw %d streams, want 2", n)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"event":"backend_refused_stream"`) || !strings.Contains(logs, net.JoinHostPort(b.Address, strconv.Itoa(b.Port))) ||
		!strings.Contains(logs, "refused every stream") {
		t.Fatalf("no log line naming the backend and the reason; logs:\n%s", logs)
	}
}

// A gRPC call to it gets the gRPC form: UNAVAILABLE, the diagnostic kept.
func TestH2BackendRefusingEveryStreamIsUnavailableToGRPC(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	b, _ := refusingH2(t)
	h.set(config.SourceDocker, h2Route("refusing", config.SchemeH2C, config.BackendTLS{}, b))
	base, c := grpcFront(t, h)
	resp := grpcCall(t, c, base, "refusing.test")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Grpc-Status") != "14" || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendRefusedStream {
		t.Fatalf("got %d grpc-status %q %q, want 200 grpc-status 14 %s", resp.StatusCode,
			resp.Header.Get("Grpc-Status"), resp.Header.Get(HeaderDiagnostic), DiagnosticBackendRefusedStream)
	}
}

// A refused stream was not processed: a POST is sent to the other
// backend with its body intact, with retry.attempts = 1 (the default),
// and the refusing backend is ejected at once, as a refused connect is.
func TestH2RefusedStreamPOSTRetriedOnAnotherBackend(t *testing.T) {
	h := newHarness(t, Options{}) // EjectAfter default: 5
	bad, streams := refusingH2(t)
	var hits atomic.Int32
	good := newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Method+" "+string(body))
	})
	e := h2Route("web", config.SchemeH2C, config.BackendTLS{}, bad, good.backend())
	h.set(config.SourceDocker, e)
	const requests = 4
	for i := range requests {
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("payload"))
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "POST payload" {
			t.Fatalf("POST %d: %d %q, want 200 %q from the other backend", i, resp.StatusCode, body, "POST payload")
		}
	}
	if n := hits.Load(); n != requests {
		t.Fatalf("the good backend saw %d requests, want %d", n, requests)
	}
	if streams.Load() == 0 {
		// Round robin starts with either: make sure the refusing one
		// was tried at all.
		t.Fatal("the refusing backend was never tried")
	}
	es, _ := h.r.Entrypoint("web")
	if !es.Backends[0].Ejected {
		t.Fatalf("the refusing backend is not ejected after one refused request: %+v", es.Backends[0])
	}
	if logs := h.logs.String(); !strings.Contains(logs, "backend ejected: it took the request on no HTTP/2 stream") {
		t.Errorf("no ejection log line; logs:\n%s", logs)
	}
}

// Each retry after a refused stream draws on the route's retry budget:
// with room for one retry, a request to three refusing backends tries
// two of them (two streams each), then answers 503.
func TestH2RefusedStreamRetryDrawsOnTheBudget(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1, RetryBudgetMin: 1, RetryBudget: 0.01})
	var bs []config.Backend
	var counts []*atomic.Int32
	for range 3 {
		b, n := refusingH2(t)
		bs, counts = append(bs, b), append(counts, n)
	}
	h.set(config.SourceDocker, h2Route("web", config.SchemeH2C, config.BackendTLS{}, bs...))
	code, _, resp := h.get("web.test", "/")
	if code != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendRefusedStream {
		t.Fatalf("got %d %q, want 503 %s", code, resp.Header.Get(HeaderDiagnostic), DiagnosticBackendRefusedStream)
	}
	var total int32
	for _, n := range counts {
		total += n.Load()
	}
	if total != 4 {
		t.Fatalf("the backends saw %d streams, want 4 (two attempts of two)", total)
	}
}
