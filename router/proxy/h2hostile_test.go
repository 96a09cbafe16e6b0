package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/client"
)

// Hostile HTTP/2 backends: each misbehaviour is a backend failure or a
// bounded answer, never a hang, never a panic, and none of it reaches
// another client (a well-behaved route answers exactly as before and
// after).

// hostileH2 is an h2c backend written with the framer: it sends
// settings, then runs act for each request's stream.
func hostileH2(t *testing.T, settings []http2.Setting, act func(fr *http2.Framer, enc *headerBlock, stream uint32)) config.Backend {
	t.Helper()
	b, _ := countedHostileH2(t, settings, act)
	return b
}

// countedHostileH2 is hostileH2 counting the connections it accepted.
func countedHostileH2(t *testing.T, settings []http2.Setting, act func(fr *http2.Framer, enc *headerBlock, stream uint32)) (config.Backend, *atomic.Int32) {
	t.Helper()
	conns := new(atomic.Int32)
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
			conns.Add(1)
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(br, preface); err != nil {
					return
				}
				fr := http2.NewFramer(c, br)
				_ = fr.WriteSettings(settings...)
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
						act(fr, newHeaderBlock(), f.StreamID)
					}
				}
			}()
		}
	}()
	return listenerBackend(ln), conns
}

// headerBlock encodes header fields with HPACK.
type headerBlock struct {
	buf bytes.Buffer
	enc *hpack.Encoder
}

func newHeaderBlock() *headerBlock {
	b := &headerBlock{}
	b.enc = hpack.NewEncoder(&b.buf)
	return b
}

// block encodes name/value pairs and returns the block, emptying it.
func (b *headerBlock) block(kv ...string) []byte {
	for i := 0; i+1 < len(kv); i += 2 {
		_ = b.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	out := append([]byte(nil), b.buf.Bytes()...)
	b.buf.Reset()
	return out
}

// hostileCase is one misbehaviour and what the client may see of it.
type hostileCase struct {
	name     string
	settings []http2.Setting
	act      func(fr *http2.Framer, enc *headerBlock, stream uint32)
	// codes are the answers allowed; 200 means the head came through
	// and the body must then break or stay within want.
	codes []int
	// body, when the head came through, is the most of it the client
	// may get.
	body string
}

func hostileCases() []hostileCase {
	big := strings.Repeat("x", 16<<10)
	// A backend failure: 502, or 504 when the route's header timeout
	// ends it first (a loaded machine reading a long header block).
	failed := []int{http.StatusBadGateway, http.StatusGatewayTimeout}
	return []hostileCase{
		{name: "header-list-over-limit", codes: failed,
			act: func(fr *http2.Framer, enc *headerBlock, stream uint32) {
				// Over client.MaxResponseHeaderBytes (1 MiB), in one
				// HEADERS and CONTINUATIONs.
				first := enc.block(":status", "200", "x-a", big)
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first})
				for range 80 {
					if fr.WriteContinuation(stream, false, enc.block("x-a", big)) != nil {
						return
					}
				}
				_ = fr.WriteContinuation(stream, true, enc.block("x-end", "1"))
			}},
		{name: "endless-continuation", codes: failed,
			act: func(fr *http2.Framer, enc *headerBlock, stream uint32) {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: enc.block(":status", "200")})
				for fr.WriteContinuation(stream, false, enc.block("x-more", big)) == nil {
				}
			}},
		{name: "max-concurrent-streams-0", settings: []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}},
			// A stream sent before the SETTINGS arrived is never answered
			// (504); a request that finds no slot ends after
			// client.H2MaxDials connections (503 backend-refused-stream).
			codes: []int{http.StatusBadGateway, http.StatusGatewayTimeout, http.StatusServiceUnavailable},
			act:   func(*http2.Framer, *headerBlock, uint32) {}},
		{name: "rst-stream-flood", codes: failed,
			act: func(fr *http2.Framer, enc *headerBlock, stream uint32) {
				for id := uint32(1); id < 20000; id += 2 {
					if fr.WriteRSTStream(id, http2.ErrCodeInternal) != nil {
						return
					}
				}
			}},
		{name: "data-beyond-content-length", codes: []int{http.StatusOK, http.StatusBadGateway}, body: "hello",
			act: func(fr *http2.Framer, enc *headerBlock, stream uint32) {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, EndHeaders: true,
					BlockFragment: enc.block(":status", "200", "content-length", "5")})
				_ = fr.WriteData(stream, true, []byte("hello, and more than was declared"))
			}},
		{name: "trailers-with-pseudo-headers", codes: []int{http.StatusOK, http.StatusBadGateway}, body: "body",
			act: func(fr *http2.Framer, enc *headerBlock, stream uint32) {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, EndHeaders: true, BlockFragment: enc.block(":status", "200")})
				_ = fr.WriteData(stream, false, []byte("body"))
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, EndHeaders: true, EndStream: true,
					BlockFragment: enc.block(":status", "500", "x-trailer", "1")})
			}},
		{name: "stalled-before-head", codes: []int{http.StatusGatewayTimeout},
			act: func(*http2.Framer, *headerBlock, uint32) {}},
		{name: "stalled-in-body", codes: []int{http.StatusOK}, body: "part",
			act: func(fr *http2.Framer, enc *headerBlock, stream uint32) {
				_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, EndHeaders: true, BlockFragment: enc.block(":status", "200")})
				_ = fr.WriteData(stream, false, []byte("part"))
			}},
	}
}

func TestHostileH2BackendsAreBoundedFailures(t *testing.T) {
	h := newHarness(t, Options{BackendBodyTimeout: 500 * time.Millisecond, EjectAfter: -1})
	good := newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "good answer")
	})
	eps := []config.Entrypoint{h2Route("good", config.SchemeH2C, config.BackendTLS{}, good.backend())}
	cases := hostileCases()
	for _, c := range cases {
		e := h2Route(c.name, config.SchemeH2C, config.BackendTLS{}, hostileH2(t, c.settings, c.act))
		e.BackendTimeout = time.Second
		eps = append(eps, e)
	}
	h.set(config.SourceDocker, eps...)
	checkGood := func(when string) {
		t.Helper()
		if code, body, _ := h.get("good.test", "/"); code != 200 || body != "good answer" {
			t.Fatalf("%s: the good route answered %d %q", when, code, body)
		}
	}
	checkGood("before")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var code int
			var body []byte
			var trailer http.Header
			go func() {
				defer close(done)
				resp := h.do(http.MethodGet, c.name+".test", "/", nil)
				code = resp.StatusCode
				body, _ = io.ReadAll(resp.Body) // a broken body ends in an error: what came is kept
				_ = resp.Body.Close()
				trailer = resp.Trailer
			}()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Fatal("no answer: the proxy hangs on the backend")
			}
			allowed := false
			for _, ok := range c.codes {
				allowed = allowed || code == ok
			}
			if !allowed {
				t.Fatalf("answered %d, want one of %v", code, c.codes)
			}
			if code == http.StatusOK && !strings.HasPrefix(c.body, string(body)) {
				t.Fatalf("body %q: more than the backend may pass on (%q)", body, c.body)
			}
			if trailer.Get(":status") != "" || trailer.Get("Status") != "" {
				t.Fatalf("a pseudo-header reached the client as a trailer: %v", trailer)
			}
			checkGood("after " + c.name)
		})
	}
}

// A backend whose SETTINGS grant no stream holds no request past the
// header timeout, nor makes the client dial without end: a stream sent
// before its SETTINGS came is never answered (the route's backendTimeout,
// 504); a request that finds no stream slot ends after
// client.H2MaxDials new connections (503 backend-refused-stream).
func TestH2BackendGrantingNoStreamIsBounded(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	b, conns := countedHostileH2(t, []http2.Setting{{ID: http2.SettingMaxConcurrentStreams, Val: 0}}, func(*http2.Framer, *headerBlock, uint32) {})
	e := h2Route("zero", config.SchemeH2C, config.BackendTLS{}, b)
	e.BackendTimeout = 500 * time.Millisecond
	h.set(config.SourceDocker, e)
	const requests = 5
	for i := range requests {
		start := time.Now()
		code, _, resp := h.get("zero.test", "/")
		refused := code == http.StatusServiceUnavailable && resp.Header.Get(HeaderDiagnostic) == DiagnosticBackendRefusedStream
		if code != http.StatusGatewayTimeout && code != http.StatusBadGateway && !refused {
			t.Fatalf("request %d: %d %q, want 504, 502 or 503 backend-refused-stream", i, code, resp.Header.Get(HeaderDiagnostic))
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("request %d answered after %v: past the dial and header timeouts", i, d)
		}
	}
	if n := conns.Load(); n > requests*client.H2MaxDials {
		t.Fatalf("%d connections for %d requests, want at most %d", n, requests, requests*client.H2MaxDials)
	}
}
