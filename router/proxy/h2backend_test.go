package proxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

// h2Backend is an HTTP/2 server on 127.0.0.1: cleartext with prior
// knowledge (h2c) or over TLS with ALPN h2 (h2).
type h2Backend struct {
	srv    *httptest.Server
	caFile string
}

func newH2Backend(t *testing.T, tlsOn bool, h http.HandlerFunc) *h2Backend {
	t.Helper()
	b := &h2Backend{srv: httptest.NewUnstartedServer(h)}
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tlsOn {
		b.srv.EnableHTTP2 = true
		b.srv.StartTLS()
		b.caFile = filepath.Join(t.TempDir(), "ca.pem")
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.srv.Certificate().Raw})
		if err := os.WriteFile(b.caFile, pemBytes, 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		b.srv.Config.Protocols = &p
		b.srv.Start()
	}
	t.Cleanup(b.srv.Close)
	return b
}

func (b *h2Backend) backend() config.Backend { return listenerBackend(b.srv.Listener) }

func listenerBackend(ln net.Listener) config.Backend {
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: "127.0.0.1", Port: p, Weight: config.DefaultWeight}
}

func h2Route(id, scheme string, bt config.BackendTLS, bs ...config.Backend) config.Entrypoint {
	e := ep(id, bs...)
	e.Scheme, e.BackendTLS = scheme, bt
	return e
}

// grpcLike answers as a gRPC server does: a head, a body streamed in
// parts, grpc-status in trailers it never announced.
func grpcLike(release <-chan struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/grpc")
		w.Header().Set("X-Proto", r.Proto)
		w.Header().Set("X-Te", r.Header.Get("Te"))
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "first;")
		w.(http.Flusher).Flush()
		if release != nil {
			<-release
		}
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, "echo:"+string(body)+";trailer-in:"+r.Trailer.Get("X-Checksum"))
		w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
		w.Header().Set(http.TrailerPrefix+"Grpc-Message", "fine")
	}
}

// Over h2c and h2 the backend sees HTTP/2 and Te: trailers, and the
// client gets the body and the trailers the backend never announced.
func TestH2BackendsForwardTrailersBothWays(t *testing.T) {
	h := newHarness(t, Options{})
	plain := newH2Backend(t, false, grpcLike(nil))
	secure := newH2Backend(t, true, grpcLike(nil))
	h.set(config.SourceDocker,
		h2Route("clear", config.SchemeH2C, config.BackendTLS{}, plain.backend()),
		h2Route("secure", config.SchemeH2, config.BackendTLS{CA: secure.caFile}, secure.backend()))
	for _, host := range []string{"clear.test", "secure.test", "clear.test"} {
		req, _ := http.NewRequest(http.MethodPost, h.front.URL+"/svc/Method", strings.NewReader("ping"))
		req.Host = host
		req.Header.Set("Te", "trailers")
		req.Header.Set("Content-Type", "application/grpc")
		req.Trailer = http.Header{"X-Checksum": {"abc"}}
		req.ContentLength = -1
		resp, err := h.front.Client().Do(req)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || string(body) != "first;echo:ping;trailer-in:abc" {
			t.Fatalf("%s: %d %q %v, want the backend's streamed answer with the request trailer", host, resp.StatusCode, body, err)
		}
		if p, te := resp.Header.Get("X-Proto"), resp.Header.Get("X-Te"); p != "HTTP/2.0" || te != "trailers" {
			t.Errorf("%s: backend saw %s with Te %q, want HTTP/2.0 and Te: trailers", host, p, te)
		}
		if s, m := resp.Trailer.Get("Grpc-Status"), resp.Trailer.Get("Grpc-Message"); s != "0" || m != "fine" {
			t.Errorf("%s: trailers %v, want grpc-status 0 and grpc-message", host, resp.Trailer)
		}
	}
}

// A streamed answer reaches the client as it comes: the first part
// arrives while the backend still holds the rest.
func TestH2BackendStreamsUnbuffered(t *testing.T) {
	h := newHarness(t, Options{})
	release := make(chan struct{})
	be := newH2Backend(t, false, grpcLike(release))
	h.set(config.SourceDocker, h2Route("web", config.SchemeH2C, config.BackendTLS{}, be.backend()))
	resp := h.do(http.MethodGet, "web.test", "/stream", nil)
	defer resp.Body.Close()
	first := make([]byte, len("first;"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first;" {
		t.Fatalf("first part: %q %v", first, err)
	}
	close(release)
	rest, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(rest), "echo:") || resp.Trailer.Get("Grpc-Status") != "0" {
		t.Fatalf("rest %q trailers %v", rest, resp.Trailer)
	}
}

// A TLS backend that does not select h2 is a backend failure with its own
// diagnostic, logged with the reason: whether it refuses the offer
// (no_application_protocol) or ignores ALPN.
func TestH2BackendWithoutALPNh2IsABackendFailure(t *testing.T) {
	h := newHarness(t, Options{})
	h1 := newHTTPSBackend(t) // ALPN http/1.1 only
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: h1.srv.TLS.Certificates})
	if err != nil {
		t.Fatal(err)
	}
	noALPN := &http.Server{Handler: http.NotFoundHandler(), ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = noALPN.Serve(ln) }()
	t.Cleanup(func() { _ = noALPN.Close() })
	p := breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 10 * time.Second}
	h.set(config.SourceDocker,
		withBreaker(h2Route("refuses", config.SchemeH2, config.BackendTLS{CA: h1.caFile}, h1.backend()), p),
		withBreaker(h2Route("ignores", config.SchemeH2, config.BackendTLS{CA: h1.caFile}, listenerBackend(ln)), p))
	for _, host := range []string{"refuses.test", "ignores.test"} {
		for i := range 2 {
			code, _, resp := h.get(host, "/")
			if code != http.StatusBadGateway || resp.Header.Get(HeaderDiagnostic) != DiagnosticBackendNoH2 {
				t.Fatalf("%s request %d: %d %q, want 502 %s", host, i, code, resp.Header.Get(HeaderDiagnostic), DiagnosticBackendNoH2)
			}
		}
		if s := breakerState(t, h, strings.TrimSuffix(host, ".test")); s != "open" {
			t.Errorf("%s: breaker %s after two failures, want open", host, s)
		}
	}
	if n := strings.Count(h.logs.String(), `"reason":"`+"h2 not selected in ALPN"+`"`); n < 4 {
		t.Errorf("log %s: want each failure logged with the reason", h.logs.String())
	}
	if h1.hits.Load() != 0 {
		t.Errorf("the HTTP/1.1 backend served %d requests, want none", h1.hits.Load())
	}
}

// rawH2 is an h2c backend written with the framer, to misbehave: for
// each request it runs act on the stream, and closes the connection when
// act says so.
func rawH2(t *testing.T, act func(fr *http2.Framer, stream uint32) (closeConn bool)) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(br, preface); err != nil {
					return
				}
				fr := http2.NewFramer(c, br)
				_ = fr.WriteSettings()
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() {
							_ = fr.WriteSettingsAck()
						}
					case *http2.HeadersFrame:
						if act(fr, f.StreamID) {
							return
						}
					}
				}
			}()
		}
	}()
	return ln
}

// A GOAWAY with the stream in flight and a stream reset are backend
// failures: counted by the breaker, answered 502.
func TestH2BackendGoAwayAndResetAreFailures(t *testing.T) {
	h := newHarness(t, Options{})
	goaway := rawH2(t, func(fr *http2.Framer, stream uint32) bool {
		_ = fr.WriteGoAway(stream, http2.ErrCodeInternal, nil)
		return true // going away with the stream in flight
	})
	reset := rawH2(t, func(fr *http2.Framer, stream uint32) bool {
		_ = fr.WriteRSTStream(stream, http2.ErrCodeInternal)
		return false
	})
	p := breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 10 * time.Second}
	h.set(config.SourceDocker,
		withBreaker(h2Route("goaway", config.SchemeH2C, config.BackendTLS{}, listenerBackend(goaway)), p),
		withBreaker(h2Route("reset", config.SchemeH2C, config.BackendTLS{}, listenerBackend(reset)), p))
	for _, id := range []string{"goaway", "reset"} {
		for i := range 2 {
			if code, _, _ := h.get(id+".test", "/"); code != http.StatusBadGateway {
				t.Fatalf("%s request %d: %d, want 502", id, i, code)
			}
		}
		if s := breakerState(t, h, id); s != "open" {
			t.Errorf("%s: breaker %s after two failures, want open", id, s)
		}
	}
}

// A client that cancels a request in flight on an h2c backend is no
// failure of the backend's, and the backend's stream is reset.
func TestH2BackendClientCancelIsNeutral(t *testing.T) {
	h := newHarness(t, Options{})
	arrived, gone := make(chan struct{}, 1), make(chan struct{}, 1)
	be := newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
		gone <- struct{}{}
	})
	h.set(config.SourceDocker, withBreaker(h2Route("web", config.SchemeH2C, config.BackendTLS{}, be.backend()), breaker.Params{Threshold: 0.5, MinRequests: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.front.URL+"/hang", nil)
	req.Host = "web.test"
	done := make(chan error, 1)
	go func() {
		_, err := h.front.Client().Do(req)
		done <- err
	}()
	<-arrived
	cancel()
	<-done
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the backend's stream was not cancelled")
	}
	g := routeGuard(t, h, "web")
	eventually(t, "the cancelled request reported", func() bool { return g.Breaker().Stats().Neutral == 1 })
	if st := g.Breaker().Stats(); st.State != breaker.Closed || st.Failures != 0 {
		t.Fatalf("a client going away counted against the backend: %+v", st)
	}
}

// panicDeadliner stands for a response writer whose handler returned:
// net/http's HTTP/2 one crashes on a deadline call then.
type panicDeadliner struct{}

func (panicDeadliner) SetReadDeadline(time.Time) error {
	panic("deadline set after the handler returned")
}
func (panicDeadliner) SetWriteDeadline(time.Time) error {
	panic("deadline set after the handler returned")
}

// A backend client reading the request body after the exchange ended
// (net/http's HTTP/2 Transport does, on its own goroutine) gets an error
// and touches neither the exchange nor the client's connection.
func TestRequestBodyReadAfterTheExchangeEnds(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("late"))
	req.ProtoMajor, req.ProtoMinor = 2, 0
	x := &exchange{dl: panicDeadliner{}, req: req}
	x.gate = &bodyGate{}
	b := &clientBody{r: strings.NewReader("late"), c: io.NopCloser(nil), x: x, gate: x.gate}
	x.closeBody()
	n, err := b.Read(make([]byte, 8))
	if n != 0 || err != errHandlerDone {
		t.Fatalf("read after the end: %d %v, want 0 and errHandlerDone", n, err)
	}
}

// An upgrade (WebSocket) asked of a route with an HTTP/2 backend goes as
// a plain request: HTTP/2 has no Upgrade, and the backend is not blamed.
func TestH2BackendUpgradeGoesPlain(t *testing.T) {
	h := newHarness(t, Options{})
	be := newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "plain "+r.Proto+" upgrade="+r.Header.Get("Upgrade"))
	})
	h.set(config.SourceDocker, withBreaker(h2Route("web", config.SchemeH2C, config.BackendTLS{}, be.backend()), breaker.Params{MinRequests: 100, ConsecutiveFailures: 1, Cooldown: 10 * time.Second}))
	req, _ := http.NewRequest(http.MethodGet, h.front.URL+"/ws", nil)
	req.Host = "web.test"
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := h.front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "plain HTTP/2.0 upgrade=" {
		t.Fatalf("%d %q, want the backend's plain answer over HTTP/2", resp.StatusCode, body)
	}
	if s := breakerState(t, h, "web"); s != "closed" {
		t.Fatalf("breaker %s, want closed", s)
	}
}
