package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// fakeHandshake stands for the handshake of the client's connection:
// until complete is called, every request looks as if it arrived in
// 0-RTT early data (it is the handler's h3.Early).
type fakeHandshake struct {
	done      chan struct{}
	once      sync.Once
	completed atomic.Bool
	asked     chan struct{} // a value each time a request is found early
}

// withFakeHandshake puts a fakeHandshake in the harness's handler. The
// front is started again after the swap, so that no request reads the
// handler while it changes.
func (h *harness) withFakeHandshake() *fakeHandshake {
	f := &fakeHandshake{done: make(chan struct{}), asked: make(chan struct{}, 64)}
	h.front.Close()
	h.p.early = f.early
	h.front = newFront(h.t, h.p)
	return f
}

func (f *fakeHandshake) early(*http.Request) (<-chan struct{}, bool) {
	select {
	case <-f.done:
		return nil, false
	default:
	}
	select {
	case f.asked <- struct{}{}:
	default:
	}
	return f.done, true
}

func (f *fakeHandshake) complete() {
	f.once.Do(func() {
		f.completed.Store(true)
		close(f.done)
	})
}

// seenRequest is what a tooEarlyBackend saw of one request.
type seenRequest struct {
	earlyData     []string // its Early-Data field
	handshakeDone bool     // the client's handshake had completed
}

// tooEarlyBackend answers 425 (Too Early) to a request marked Early-Data,
// as a backend unwilling to risk a replay does (RFC 8470 5.2), and "real
// answer" to the others.
type tooEarlyBackend struct {
	srv      *httptest.Server
	mu       sync.Mutex
	seen     []seenRequest
	answered chan struct{} // a value per 425 sent
}

func newTooEarlyBackend(t *testing.T, hs *fakeHandshake) *tooEarlyBackend {
	t.Helper()
	b := &tooEarlyBackend{answered: make(chan struct{}, 64)}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		b.mu.Lock()
		b.seen = append(b.seen, seenRequest{earlyData: r.Header.Values("Early-Data"), handshakeDone: hs != nil && hs.completed.Load()})
		b.mu.Unlock()
		if r.Header.Get("Early-Data") != "" {
			w.WriteHeader(http.StatusTooEarly)
			_, _ = io.WriteString(w, "too early")
			b.answered <- struct{}{}
			return
		}
		_, _ = io.WriteString(w, "real answer")
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *tooEarlyBackend) backend() config.Backend {
	host, port, _ := net.SplitHostPort(b.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: host, Port: p, Weight: config.DefaultWeight, Name: "too-early"}
}

func (b *tooEarlyBackend) requests() []seenRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]seenRequest(nil), b.seen...)
}

// strictRoute is an earlyData route whose breaker opens on the first
// 4xx or 5xx and whose backend is ejected on its first failure: any 425
// counted against the backend would show.
func strictRoute(t *testing.T, b config.Backend) config.Entrypoint {
	t.Helper()
	fails, err := breaker.ParseStatuses("400-599")
	if err != nil {
		t.Fatal(err)
	}
	e := withBreaker(ep("web", b), breaker.Params{Threshold: 1, MinRequests: 1, ConsecutiveFailures: 1, Cooldown: time.Minute, FailureStatuses: fails})
	e.PassiveHealth = config.PassiveHealth{ConsecutiveFailures: 1, EjectTime: time.Minute, MaxEjectTime: time.Minute, MaxEjectedShare: 1}
	e.EarlyData = true
	return e
}

// assertNotJudged checks that the route's breaker counted no failure and
// neutrals neutral 425s, and that its backend is in rotation with no
// failure recorded.
func assertNotJudged(t *testing.T, h *harness, neutrals uint64) {
	t.Helper()
	st := routeGuard(t, h, "web").Breaker().Stats()
	if st.State != breaker.Closed || st.Failures != 0 || st.Neutral != neutrals {
		t.Errorf("breaker: state %s, %d failures, %d neutral; want closed, 0, %d", st.State, st.Failures, st.Neutral, neutrals)
	}
	rt, _ := h.r.Snapshot().Route("web")
	for _, be := range rt.Backends() {
		if be.State().Ejected(h.clock.Now().UnixNano()) || be.State().Ejection().Failures.Load() != 0 {
			t.Errorf("backend judged by a 425: ejected %v, failures %d", be.State().Ejected(h.clock.Now().UnixNano()), be.State().Ejection().Failures.Load())
		}
	}
}

type answer struct {
	code int
	body string
}

// doAsync sends req through the front in the background.
func (h *harness) doAsync(req *http.Request) <-chan answer {
	got := make(chan answer, 1)
	go func() {
		resp, err := h.front.Client().Do(req)
		if err != nil {
			got <- answer{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, string(b)}
	}()
	return got
}

func waitFor[T any](t *testing.T, what string, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

// RFC 8470 5.2: a GET that arrived in early data and was forwarded with
// Early-Data: 1 is answered 425 by the backend; Levee waits for the
// client's handshake, sends it again without Early-Data and answers the
// backend's real answer. The 425 counts against neither the breaker nor
// passive ejection (both would trip on it), and the retry is counted
// with its reason, in the metrics and the access log.
func TestTooEarlyRetriedAfterHandshake(t *testing.T) {
	h := newHarness(t, Options{AccessLog: true})
	hs := h.withFakeHandshake()
	be := newTooEarlyBackend(t, hs)
	h.set(config.SourceDocker, strictRoute(t, be.backend()))

	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
	req.Host = "web.test"
	got := h.doAsync(req)
	waitFor(t, "the request found early", hs.asked)
	waitFor(t, "the backend's 425", be.answered)
	// Levee asks again after the 425, and waits for the handshake: the
	// backend has seen the request once until it completes.
	waitFor(t, "the wait for the handshake", hs.asked)
	if n := len(be.requests()); n != 1 {
		t.Fatalf("backend saw %d requests before the handshake completed, want 1", n)
	}
	hs.complete()
	if a := waitFor(t, "the answer", got); a.code != http.StatusOK || a.body != "real answer" {
		t.Fatalf("client got %d %q, want the backend's real answer", a.code, a.body)
	}
	seen := be.requests()
	if len(seen) != 2 {
		t.Fatalf("backend saw %d requests, want 2: %+v", len(seen), seen)
	}
	if first := seen[0]; len(first.earlyData) != 1 || first.earlyData[0] != "1" || first.handshakeDone {
		t.Errorf("first request: %+v, want Early-Data: 1 before the handshake", first)
	}
	if retry := seen[1]; len(retry.earlyData) != 0 || !retry.handshakeDone {
		t.Errorf("retry: %+v, want no Early-Data, after the handshake", retry)
	}
	assertNotJudged(t, h, 1)
	if v := metricValue(t, h, "levee_retries_total", map[string]string{"route": "web", "reason": "too_early"}); v != 1 {
		t.Errorf("levee_retries_total{reason=too_early} = %v, want 1", v)
	}
	if findMetric(t, h, "levee_retries_total", map[string]string{"route": "web", "reason": "failure"}) != nil {
		t.Error("the 425 retry was counted as a failure's")
	}
	eventually(t, "the access line", func() bool { return strings.Contains(h.logs.String(), `"event":"access"`) })
	line := h.logs.String()
	if !strings.Contains(line, `"retry_reason":"too_early"`) || !strings.Contains(line, `"attempts":2`) || !strings.Contains(line, `"status":200`) {
		t.Errorf("access line lacks the retry and its reason:\n%s", line)
	}
}

// The 425 goes to the client when Levee cannot retry: the client marked
// the request Early-Data itself (RFC 8470 5.2: an intermediary MUST
// forward it, the hop before retries), or its body streamed and cannot
// be sent again. Either way the backend saw the request once and the 425
// is judged neutral.
func TestTooEarlyForwardedWhenNoRetry(t *testing.T) {
	cases := []struct {
		name   string
		mark   bool
		body   string
		buffer int64
	}{
		{name: "client marked it", mark: true},
		{name: "body not replayable", body: strings.Repeat("x", 64), buffer: 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Options{})
			hs := h.withFakeHandshake()
			be := newTooEarlyBackend(t, hs)
			e := strictRoute(t, be.backend())
			e.Retry.BodyBuffer = c.buffer
			h.set(config.SourceDocker, e)

			var body io.Reader
			if c.body != "" {
				body = strings.NewReader(c.body)
			}
			req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", body)
			req.Host = "web.test"
			if c.mark {
				req.Header.Set("Early-Data", "1")
			}
			a := waitFor(t, "the answer", h.doAsync(req))
			if a.code != http.StatusTooEarly || a.body != "too early" {
				t.Fatalf("client got %d %q, want the backend's 425", a.code, a.body)
			}
			if seen := be.requests(); len(seen) != 1 || len(seen[0].earlyData) != 1 || seen[0].earlyData[0] != "1" {
				t.Fatalf("backend saw %+v, want one request with Early-Data: 1", seen)
			}
			assertNotJudged(t, h, 1)
			if findMetric(t, h, "levee_retries_total", map[string]string{"route": "web"}) != nil {
				t.Error("a retry was counted")
			}
		})
	}
}

// A POST that arrived in early data is never forwarded early, earlyData
// or not: it reaches the backend once the handshake has completed,
// without Early-Data, and is served.
func TestEarlyPostWaitsForHandshake(t *testing.T) {
	h := newHarness(t, Options{})
	hs := h.withFakeHandshake()
	be := newTooEarlyBackend(t, hs)
	h.set(config.SourceDocker, strictRoute(t, be.backend()))

	req, _ := http.NewRequest(http.MethodPost, h.front.URL+"/", strings.NewReader("order=1"))
	req.Host = "web.test"
	got := h.doAsync(req)
	waitFor(t, "the request held in early data", hs.asked)
	hs.complete()
	if a := waitFor(t, "the answer", got); a.code != http.StatusOK || a.body != "real answer" {
		t.Fatalf("client got %d %q", a.code, a.body)
	}
	if seen := be.requests(); len(seen) != 1 || len(seen[0].earlyData) != 0 || !seen[0].handshakeDone {
		t.Fatalf("backend saw %+v, want one request without Early-Data, after the handshake", seen)
	}
	assertNotJudged(t, h, 0)
}

// RFC 8470 5.1: an intermediary MUST NOT remove a client's Early-Data. A
// request that did not arrive in early data keeps it, from any client,
// and several or other values reach the backend as one "1"; a backend
// answering 425 to it has that 425 forwarded, not retried.
func TestEarlyDataClientHeaderKept(t *testing.T) {
	h := newHarness(t, Options{})
	optIn := ep("optin", earlyEcho(t))
	optIn.EarlyData = true
	h.set(config.SourceDocker, optIn)
	for _, values := range [][]string{{"1"}, {"yes"}, {"1", "1"}} {
		req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
		req.Host = "optin.test"
		req.Header["Early-Data"] = values
		resp, err := h.front.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "early-data=1" {
			t.Errorf("Early-Data %q: backend got %q, want early-data=1", values, b)
		}
	}

	be := newTooEarlyBackend(t, nil)
	h.set(config.SourceDocker, strictRoute(t, be.backend()))
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
	req.Host = "web.test"
	req.Header.Set("Early-Data", "1")
	if a := waitFor(t, "the answer", h.doAsync(req)); a.code != http.StatusTooEarly {
		t.Fatalf("client got %d %q, want the backend's 425", a.code, a.body)
	}
	if n := len(be.requests()); n != 1 {
		t.Fatalf("backend saw %d requests, want 1", n)
	}
	assertNotJudged(t, h, 1)
}

// A Connection field naming Early-Data (which RFC 8470 5.1 forbids a
// sender) does not take the field off a request: not one Levee marked
// because it arrived in early data, nor one the client marked.
func TestEarlyDataSurvivesConnection(t *testing.T) {
	h := newHarness(t, Options{})
	hs := h.withFakeHandshake()
	optIn := ep("optin", earlyEcho(t))
	optIn.EarlyData = true
	h.set(config.SourceDocker, optIn)
	for _, mark := range []bool{false, true} {
		req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
		req.Host = "optin.test"
		req.Header.Set("Connection", "Early-Data")
		if mark {
			req.Header.Set("Early-Data", "1")
		}
		a := waitFor(t, "the answer", h.doAsync(req))
		if a.code != http.StatusOK || a.body != "early-data=1" {
			t.Errorf("client marked %v: %d %q, want the backend to see Early-Data: 1", mark, a.code, a.body)
		}
	}
	hs.complete()
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/", nil)
	req.Host = "optin.test"
	req.Header.Set("Connection", "Early-Data")
	req.Header.Set("Early-Data", "1")
	if a := waitFor(t, "the answer", h.doAsync(req)); a.body != "early-data=1" {
		t.Errorf("after the handshake, client marked: %d %q, want the backend to see Early-Data: 1", a.code, a.body)
	}
}

// The wait for the handshake after a 425 ends with the request's context
// (quic-go ends it when the handshake fails or times out): a client gone
// meanwhile leaves no handler waiting, and the request is not sent again
// when the handshake would have completed after all.
func TestTooEarlyWaitEndsWithTheRequest(t *testing.T) {
	h := newHarness(t, Options{AccessLog: true})
	hs := h.withFakeHandshake()
	be := newTooEarlyBackend(t, hs)
	h.set(config.SourceDocker, strictRoute(t, be.backend()))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.front.URL+"/", nil)
	req.Host = "web.test"
	got := h.doAsync(req)
	waitFor(t, "the request found early", hs.asked)
	waitFor(t, "the backend's 425", be.answered)
	waitFor(t, "the wait for the handshake", hs.asked)
	cancel()
	waitFor(t, "the client's end", got)
	eventually(t, "the handler's end (its access line)", func() bool { return strings.Contains(h.logs.String(), `"event":"access"`) })
	hs.complete()
	if n := len(be.requests()); n != 1 {
		t.Fatalf("backend saw %d requests, want 1: the 425'd one, not sent again", n)
	}
	assertNotJudged(t, h, 1)
}
