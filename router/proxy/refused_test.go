package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// A refused connection never reached the backend: the request goes to
// another backend whatever its method, even with retry.attempts = 1 (the
// default), on both backend clients, and the refusing backend is ejected
// at once (one failure, not consecutiveFailures).
func TestRefusedConnectRetriedOnAnotherBackendAndEjectedAtOnce(t *testing.T) {
	for _, std := range []bool{false, true} {
		name := map[bool]string{false: "levee-client", true: "stdlib-client"}[std]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{StandardTransport: std}) // EjectAfter default: 5
			good := newBackend(t, "good")
			e := ep("web", deadBackend(t), good.backend())
			if e.Retry.Attempts != 0 && e.Retry.Attempts != 1 {
				t.Fatalf("retry.attempts = %d, want the default 1", e.Retry.Attempts)
			}
			h.set(config.SourceDocker, e)
			for i, m := range []string{http.MethodPost, http.MethodPatch, http.MethodGet, http.MethodPost} {
				resp := h.do(m, "web.test", "/", strings.NewReader("payload"))
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Fatalf("%s %d: %d, want 200 from the other backend", m, i, resp.StatusCode)
				}
			}
			if n := good.hits.Load(); n != 4 {
				t.Fatalf("the good backend saw %d requests, want 4", n)
			}
			es, _ := h.r.Entrypoint("web")
			if !es.Backends[0].Ejected {
				t.Fatalf("the refusing backend is not ejected after one refusal: %+v", es.Backends[0])
			}
			if !strings.Contains(h.logs.String(), "backend ejected: it refused a connection") {
				t.Errorf("no ejection log line; logs:\n%s", h.logs.String())
			}
		})
	}
}

// A retry after a refusal draws nothing from the retry budget: with a
// budget of one retry and ejection off, every request still succeeds.
func TestRefusedConnectRetryNeedsNoBudget(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1, RetryBudgetMin: 1, RetryBudget: 0.01})
	good := newBackend(t, "good")
	h.set(config.SourceDocker, ep("web", deadBackend(t), good.backend()))
	for i := 0; i < 20; i++ {
		resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("x"))
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("POST %d: %d", i, resp.StatusCode)
		}
	}
	if n := good.hits.Load(); n != 20 {
		t.Fatalf("good backend saw %d, want 20", n)
	}
}

// A refused connection is tried once per backend and request: with every
// backend refusing, the answer is 503 no-healthy-backend with Retry-After
// after one connect to each, not a loop.
func TestEveryBackendRefusingIs503(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	h.set(config.SourceDocker, ep("web", deadBackend(t), deadBackend(t), deadBackend(t)))
	code, _, resp := h.get("web.test", "/")
	if code != http.StatusServiceUnavailable || resp.Header.Get(HeaderDiagnostic) != DiagnosticNoHealthyBackend ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("got %d %q Retry-After %q, want 503 no-healthy-backend with a Retry-After",
			code, resp.Header.Get(HeaderDiagnostic), resp.Header.Get("Retry-After"))
	}
	if got := metricValue(t, h, "levee_retries_total", map[string]string{"route": "web"}); got != 3 {
		// Each refusal readies a retry; the third finds no backend left.
		t.Fatalf("levee_retries_total = %v, want 3 (three backends, each tried once)", got)
	}
}

// A backend that answered is not ejected at once by a single failure: the
// immediate ejection is for refusals only.
func TestOneFailedAnswerDoesNotEjectAtOnce(t *testing.T) {
	h := newHarness(t, Options{})
	bad, good := newBackend(t, "bad"), newBackend(t, "good")
	bad.mode.Store(modeFail)
	h.set(config.SourceDocker, ep("web", bad.backend(), good.backend()))
	for i := 0; i < 2; i++ {
		h.get("web.test", "/")
	}
	if es, _ := h.r.Entrypoint("web"); es.Backends[0].Ejected {
		t.Fatal("a backend that answered 500 once is ejected")
	}
}

// A route with no backend left (its only container stopping) answers 503
// with a Retry-After.
func TestNoBackendIs503WithRetryAfter(t *testing.T) {
	h := newHarness(t, Options{})
	h.set(config.SourceDocker, ep("web"))
	code, _, resp := h.get("web.test", "/")
	if code != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("got %d Retry-After %q, want 503 with Retry-After 1", code, resp.Header.Get("Retry-After"))
	}
}

// A backend that closes the connection before answering (one shutting
// down) may have seen the request: an idempotent one goes to another
// backend even with retry.attempts = 1, a POST does not.
func TestClosedBeforeAnswerRetriedForIdempotentOnly(t *testing.T) {
	for _, std := range []bool{false, true} {
		name := map[bool]string{false: "levee-client", true: "stdlib-client"}[std]
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Options{StandardTransport: std, EjectAfter: -1})
			var closed atomic.Int64
			closer := rawBackend(t, func(c net.Conn) {
				if _, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
					closed.Add(1)
				}
			})
			closer.Weight = config.DefaultWeight
			good := newBackend(t, "good")
			h.set(config.SourceDocker, ep("web", closer, good.backend()))
			for i := 0; i < 4; i++ {
				if code, _, _ := h.get("web.test", "/"); code != 200 {
					t.Fatalf("GET %d: %d, want 200 from the other backend", i, code)
				}
			}
			if closed.Load() == 0 {
				t.Fatal("no GET met the closing backend: the test proves nothing")
			}
			codes := map[int]int{}
			for i := 0; i < 4; i++ {
				resp := h.do(http.MethodPost, "web.test", "/", strings.NewReader("x"))
				resp.Body.Close()
				codes[resp.StatusCode]++
			}
			if codes[502] == 0 || codes[200] == 0 || codes[502]+codes[200] != 4 {
				t.Fatalf("POST answers %v, want some 502 (never resent) and some 200", codes)
			}
		})
	}
}
