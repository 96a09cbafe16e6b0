package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/e2e/fakeclock"
	"github.com/levee-proxy/levee/e2e/logbuf"
	"github.com/levee-proxy/levee/e2e/poll"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/server"
)

// fakeClock is the harness's clock: it moves only by Advance.
type fakeClock = fakeclock.Clock

func newFakeClock() *fakeClock { return fakeclock.New(epoch) }

// Backend modes.
const (
	modeOK   = iota // 200 "ok from <name>"
	modeFail        // status from failStatus
	modeHang        // waits until released (or the request ends)
)

// testBackend is a real HTTP server on 127.0.0.1 that can be told to fail
// or hang, and counts what reaches it.
type testBackend struct {
	name       string
	srv        *httptest.Server
	hits       atomic.Int64
	mode       atomic.Int32
	failStatus atomic.Int32
	healthy    atomic.Bool   // answer of /health (not counted in hits)
	release    chan struct{} // closed to let hanging requests go
	relOnce    sync.Once
	arrived    chan struct{} // one value per request that starts hanging
	mu         sync.Mutex
	lastReq    *http.Request
}

func newBackend(t *testing.T, name string) *testBackend {
	t.Helper()
	b := &testBackend{name: name, release: make(chan struct{}), arrived: make(chan struct{}, 64)}
	b.failStatus.Store(http.StatusInternalServerError)
	b.healthy.Store(true)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			if !b.healthy.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		b.hits.Add(1)
		r2 := r.Clone(r.Context())
		b.mu.Lock()
		b.lastReq = r2
		b.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Backend", name)
		mode := b.mode.Load()
		switch r.URL.Path { // per-request overrides
		case "/hang":
			mode = modeHang
		case "/fail":
			mode = modeFail
		}
		switch mode {
		case modeFail:
			w.WriteHeader(int(b.failStatus.Load()))
			fmt.Fprintf(w, "fail from %s", name)
			return
		case modeHang:
			b.arrived <- struct{}{}
			select {
			case <-b.release:
			case <-r.Context().Done():
				return
			}
		}
		fmt.Fprintf(w, "ok from %s", name)
	}))
	t.Cleanup(func() {
		b.unhang()
		b.srv.Close()
	})
	return b
}

func (b *testBackend) unhang() { b.relOnce.Do(func() { close(b.release) }) }

func (b *testBackend) backend() config.Backend {
	host, port, _ := net.SplitHostPort(b.srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: host, Port: p, Weight: config.DefaultWeight, Name: b.name}
}

func (b *testBackend) last() *http.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lastReq
}

// deadBackend returns a Backend nothing listens on.
func deadBackend(t *testing.T) config.Backend {
	t.Helper()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		// The kernel may hand a just-closed port out again; a test that
		// asks for several dead backends means several addresses.
		if _, taken := deadPorts.LoadOrStore(port, true); !taken {
			return config.Backend{Address: "127.0.0.1", Port: port, Weight: config.DefaultWeight, Name: "dead"}
		}
	}
}

// deadPorts holds the ports deadBackend handed out in this test binary.
var deadPorts sync.Map

// testFront serves a handler the way levee serve does: with router/httpx/server,
// or with net/http's server when LEVEE_TEST_SERVER=stdlib (levee serve
// --http-server=stdlib); `make test` runs this package both ways.
type testFront struct {
	URL      string
	Listener net.Listener
	client   *http.Client
	close    func()
}

// Client returns a client for the front, closed with it.
func (f *testFront) Client() *http.Client { return f.client }

// Close stops the server and closes its connections.
func (f *testFront) Close() { f.close() }

// stdlibClient reports LEVEE_TEST_CLIENT=stdlib: the router under test
// sends backend requests through net/http's Transport (levee serve
// --backend-client=stdlib); `make test` runs this package both ways.
func stdlibClient() bool { return os.Getenv("LEVEE_TEST_CLIENT") == "stdlib" }

func newFront(t testing.TB, handler http.Handler) *testFront {
	t.Helper()
	return newFrontOf(t, handler, os.Getenv("LEVEE_TEST_SERVER") == "stdlib")
}

// newFrontOf is newFront with the server chosen: net/http's when stdlib.
func newFrontOf(t testing.TB, handler http.Handler, stdlib bool) *testFront {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	tr := &http.Transport{}
	f := &testFront{URL: "http://" + ln.Addr().String(), Listener: ln, client: &http.Client{Transport: tr}}
	done := make(chan struct{})
	if stdlib {
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 1 << 20}
		go func() { defer close(done); _ = srv.Serve(ln) }()
		f.close = func() { _ = srv.Close(); tr.CloseIdleConnections(); <-done }
		return f
	}
	srv := &server.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second, MaxHeaderBytes: 1 << 20}
	go func() { defer close(done); _ = srv.Serve(ln) }()
	f.close = func() { _ = srv.Close(); tr.CloseIdleConnections(); <-done }
	return f
}

// harness is a Router and the request path over it, behind a real
// listener.
type harness struct {
	t     *testing.T
	r     *router.Router
	p     *Handler
	front *testFront
	clock *fakeClock
	reg   *prometheus.Registry
	logs  *syncBuffer
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer = logbuf.Buffer

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	return newHarnessWith(t, router.Options{}, opts)
}

// newHarnessWith is newHarness with the router's options too. Both share
// the harness's clock (unless ro sets one), registry and log.
func newHarnessWith(t *testing.T, ro router.Options, opts Options) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	if ro.Clock == nil {
		ro.Clock = h.clock
	}
	if opts.Clock == nil {
		opts.Clock = ro.Clock
	}
	ro.Registerer, opts.Registerer = h.reg, h.reg
	ro.Logger = zerolog.New(h.logs)
	opts.Logger = ro.Logger
	if stdlibClient() {
		opts.StandardTransport = true
	}
	h.r = router.New(ro)
	h.p = New(h.r, opts)
	h.front = newFront(t, h.p)
	t.Cleanup(func() {
		h.front.Close()
		h.r.Close()
		h.p.Close()
	})
	return h
}

// epoch is the fake clock's start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// route returns a normalised entrypoint for tests.
func route(id, path string, hosts ...string) config.Entrypoint {
	ep := config.DefaultEntrypoint()
	ep.ID, ep.Name, ep.Source = id, id, config.SourceAPI
	ep.Path = path
	ep.Hosts = hosts
	ep.Created = epoch
	ep.Backends = []config.Backend{{Address: "127.0.0.1", Port: 1, Weight: config.DefaultWeight}}
	// Passive ejection comes from the harness's Options unless a test sets
	// the route's own (a zero field takes the Options value).
	ep.PassiveHealth = config.PassiveHealth{}
	return ep
}

// dialFront opens a raw connection to the front, with a 10 s deadline,
// closed when the test ends.
func (h *harness) dialFront() net.Conn {
	h.t.Helper()
	conn, err := net.Dial("tcp", h.front.Listener.Addr().String())
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	return conn
}

// ep builds an entrypoint on host h.test, path "/", with the backends.
func ep(id string, bs ...config.Backend) config.Entrypoint {
	e := route(id, "/", id+".test")
	e.Source = config.SourceDocker
	e.Backends = bs
	return e
}

func (h *harness) set(source string, eps ...config.Entrypoint) {
	for i := range eps {
		eps[i].Source = source
	}
	h.r.Update(config.SourceUpdate{Source: source, Entrypoints: eps})
}

// do sends a request for host through the proxy.
func (h *harness) do(method, host, path string, body io.Reader) *http.Response {
	h.t.Helper()
	req, err := http.NewRequest(method, h.front.URL+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Host = host
	resp, err := h.front.Client().Do(req)
	if err != nil {
		h.t.Fatalf("%s %s%s: %v", method, host, path, err)
	}
	return resp
}

// get sends GET and returns status, body and response.
func (h *harness) get(host, path string) (int, string, *http.Response) {
	h.t.Helper()
	resp := h.do(http.MethodGet, host, path, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

func waitArrived(t *testing.T, b *testBackend) {
	t.Helper()
	select {
	case <-b.arrived:
	case <-time.After(10 * time.Second):
		t.Fatalf("no request reached %s", b.name)
	}
}

// routeGuard returns the route's breaker (scope=route) in the current
// snapshot.
func routeGuard(t *testing.T, h *harness, id string) *router.Guard {
	t.Helper()
	rt, ok := h.r.Snapshot().Route(id)
	if !ok || rt.State().Guard() == nil {
		t.Fatalf("route %s has no breaker", id)
	}
	return rt.State().Guard()
}
