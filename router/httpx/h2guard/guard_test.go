//lint:file-ignore SA1019 HTTP/2 is served by x/net/http2.Server (ServeConn, ConfigureServer) until it moves to net/http's own HTTP/2 support (http.Server.Protocols); the h2guard budget and the h2spec results are tied to this server

package h2guard

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/levee-proxy/levee/router/httpx/internal/testcert"
)

// server is an HTTP/2 server behind the guard, on a TLS listener; the
// guard's clock stands still, so only work refills a budget.
type server struct {
	addr   string
	mu     sync.Mutex
	floods []uint8
}

func (s *server) flooded() []uint8 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]uint8(nil), s.floods...)
}

var big = bytes.Repeat([]byte("levee "), 8<<20/6)

func startServer(t *testing.T) *server { t.Helper(); return startServerBurst(t, 0) }

// startServerBurst is startServer with the guard's Burst (0: Burst).
func startServerBurst(t *testing.T, burst int64) *server {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", testcert.Config(t, "h2.test", "h2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &server{addr: ln.Addr().String()}
	frozen := time.Unix(1_000_000, 0)
	// The smallest frames HTTP/2 allows (RFC 9113 4.2), as browsers send:
	// Go's client splits a header block over 16 KiB into CONTINUATIONs.
	h2 := &http2.Server{MaxReadFrameSize: 16 << 10}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// /noread answers at once, and the server resets the stream
		// (NO_ERROR, RFC 9113 8.1); elsewhere a body is read whole: a
		// stream whose client sends one stays open until it ends.
		if r.URL.Path == "/noread" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/big" {
			_, _ = w.Write(big)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				tc := c.(*tls.Conn)
				if tc.Handshake() != nil {
					tc.Close()
					return
				}
				g := New(tc, Options{Burst: burst, Now: func() time.Time { return frozen }, OnFlood: func(typ uint8) {
					s.mu.Lock()
					s.floods = append(s.floods, typ)
					s.mu.Unlock()
				}})
				h2.ServeConn(g, &http2.ServeConnOpts{Handler: handler})
				g.Close()
			}()
		}
	}()
	return s
}

// rawClient is an HTTP/2 client that writes frames as told.
type rawClient struct {
	conn net.Conn
	fr   *http2.Framer
}

func dial(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &rawClient{conn: conn, fr: http2.NewFramer(conn, conn)}
	// Every answer's header block goes through one decoder, whose table
	// follows the server's encoder (a fresh one per answer could not read
	// the second).
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// floods are the frames a client may send without end; each writes one.
var floods = []struct {
	name  string
	typ   uint8
	write func(fr *http2.Framer) error
}{
	{"SETTINGS", typeSettings, func(fr *http2.Framer) error {
		return fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
	}},
	{"WINDOW_UPDATE", typeWindowUpdate, func(fr *http2.Framer) error { return fr.WriteWindowUpdate(0, 1) }},
	{"PRIORITY", typePriority, func(fr *http2.Framer) error {
		return fr.WritePriority(3, http2.PriorityParam{StreamDep: 0, Weight: 15})
	}},
	{"PING", typePing, func(fr *http2.Framer) error { return fr.WritePing(false, [8]byte{1}) }},
	{"unknown", 0x20, func(fr *http2.Framer) error { return fr.WriteRawFrame(0x20, 0, 0, []byte("x")) }},
}

// readsUntilEnd reads frames until the connection ends and reports
// whether a GOAWAY with ENHANCE_YOUR_CALM came before the end (it does
// when the server's output was at a frame boundary when the budget ran
// out).
func (c *rawClient) readsUntilEnd(t *testing.T) (calm bool) {
	t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatal("the connection was not cut within 10 s")
			}
			return calm
		}
		if g, ok := f.(*http2.GoAwayFrame); ok && g.ErrCode == http2.ErrCodeEnhanceYourCalm {
			calm = true
		}
	}
}

// Each flood is cut once past the budget (the connection ends, after a
// GOAWAY ENHANCE_YOUR_CALM when it can be sent between two frames); just
// under it, the connection still serves.
func TestFloodsAreCut(t *testing.T) {
	s := startServer(t)
	for _, f := range floods {
		t.Run(f.name, func(t *testing.T) {
			before := len(s.flooded())
			c := dial(t, s.addr)
			// The client's own SETTINGS (and its ACK) spent one or two.
			go func() {
				for range Burst + 16 {
					if f.write(c.fr) != nil {
						return
					}
				}
			}()
			if !c.readsUntilEnd(t) {
				t.Log("the connection ended without GOAWAY (the server was mid-frame)")
			}
			got := s.flooded()
			if len(got) != before+1 || got[before] != f.typ {
				t.Errorf("cut for %v, want one cut for %s", got[before:], FrameName(f.typ))
			}
		})
		t.Run(f.name+"/under the budget", func(t *testing.T) {
			c := dial(t, s.addr)
			for range Burst - 8 {
				if err := f.write(c.fr); err != nil {
					t.Fatal(err)
				}
			}
			if status := c.get(t, 1, "/"); status != "200" {
				t.Fatalf("after %d %s frames: status %q, want 200", Burst-8, f.name, status)
			}
		})
	}
}

// get sends GET path on stream id and returns the answer's :status
// (acknowledging SETTINGS and PINGs on the way).
func (c *rawClient) get(t *testing.T, id uint32, path string) string {
	t.Helper()
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, kv := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "h2.test"}, {":path", path}} {
		_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	return c.answer(t, id)
}

// answer reads frames until the answer on stream id and returns its :status.
func (c *rawClient) answer(t *testing.T, id uint32) string {
	t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			t.Fatalf("waiting for the answer: %v", err)
		}
		if h, ok := f.(*http2.MetaHeadersFrame); ok && h.StreamID == id {
			return h.PseudoValue("status")
		}
	}
}

// A real client's big downloads send many more WINDOW_UPDATEs than the
// budget holds (Go's, two every 4 KiB read): the DATA the server sends pays
// for them, and nothing is cut.
func TestDownloadsAreServed(t *testing.T) {
	s := startServer(t)
	tr := &http2.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for i := range 3 {
		resp, err := client.Get("https://" + s.addr + "/big")
		if err != nil {
			t.Fatalf("download %d: %v", i, err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(len(big)) {
			t.Fatalf("download %d: %d of %d bytes, %v (cut for %v)", i, n, len(big), err, s.flooded())
		}
	}
	if got := s.flooded(); len(got) != 0 {
		t.Fatalf("a client downloading was cut: %v", got)
	}
}

// The frame reader finds headers split across reads at any byte.
func TestFrameReaderSplits(t *testing.T) {
	var stream bytes.Buffer
	fr := http2.NewFramer(&stream, nil)
	_ = fr.WriteSettings()
	_ = fr.WriteData(1, false, bytes.Repeat([]byte{1}, 300))
	_ = fr.WritePing(false, [8]byte{})
	_ = fr.WriteRawFrame(0x20, 0, 0, nil)
	raw := stream.Bytes()
	for size := 1; size <= len(raw); size++ {
		var r frameReader
		var types []uint8
		for b := raw; len(b) > 0; {
			k := min(size, len(b))
			r.feed(b[:k], func(typ, _ uint8, _, _ uint32) bool { types = append(types, typ); return true })
			b = b[k:]
		}
		if !bytes.Equal(types, []uint8{typeSettings, typeData, typePing, 0x20}) || !r.atBoundary() {
			t.Fatalf("pieces of %d: types %v, at boundary %v", size, types, r.atBoundary())
		}
	}
}

// Frames that carry nothing of a request are control frames: empty or
// padding-only DATA frames that do not end their stream, and CONTINUATIONs under
// SmallFragment bytes that do not end their header block, sent while a
// stream is open (Go's server reads them for as long as one is), are cut
// once past the budget.
func TestEmptyFramesAreCut(t *testing.T) {
	s := startServer(t)
	head := func(c *rawClient, endHeaders bool) {
		var b bytes.Buffer
		enc := hpack.NewEncoder(&b)
		for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "h2.test"}, {":path", "/"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
		}
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b.Bytes(), EndHeaders: endHeaders}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct {
		name  string
		typ   uint8
		open  func(c *rawClient)
		write func(fr *http2.Framer) error
	}{
		{"empty DATA", typeData, func(c *rawClient) { head(c, true) }, func(fr *http2.Framer) error { return fr.WriteData(1, false, nil) }},
		{"padding-only DATA", typeData, func(c *rawClient) { head(c, true) }, func(fr *http2.Framer) error {
			return fr.WriteDataPadded(1, false, nil, make([]byte, 255))
		}},
		{"short CONTINUATION", typeContinuation, func(c *rawClient) { head(c, false) }, func(fr *http2.Framer) error {
			return fr.WriteContinuation(1, false, nil)
		}},
	} {
		t.Run(f.name, func(t *testing.T) {
			before := len(s.flooded())
			c := dial(t, s.addr)
			f.open(c)
			go func() {
				for range 2 * Burst {
					if f.write(c.fr) != nil {
						return
					}
				}
			}()
			c.readsUntilEnd(t)
			got := s.flooded()
			if len(got) != before+1 || got[before] != f.typ {
				t.Errorf("cut for %v, want one cut for %s", got[before:], FrameName(f.typ))
			}
		})
	}
}

// What real clients send is never counted: Go's client uploading bodies
// (a last, empty DATA frame ends the stream) with header lists of 900 KiB
// (about 40 CONTINUATIONs, more than twice what a request's PerRequest
// adds), request after request on one connection, within a budget of 50.
func TestBigHeadersAndUploadsAreServed(t *testing.T) {
	s := startServerBurst(t, 50)
	tr := &http2.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	value := strings.Repeat("h", 900<<10)
	body := bytes.Repeat([]byte("b"), 100<<10)
	for i := range 10 {
		req, _ := http.NewRequest(http.MethodPost, "https://"+s.addr+"/", bytes.NewReader(body))
		req.Header.Set("X-Big", value)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v (cut for %v)", i, err, s.flooded())
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(got) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, got)
		}
	}
	if got := s.flooded(); len(got) != 0 {
		t.Fatalf("a client sending big requests was cut: %v", got)
	}
}

// RST_STREAM and GOAWAY frames ask for work without end too: an RST_STREAM
// for a stream already closed is read and ignored (RFC 9113 5.1), and a
// GOAWAY with an error code is read and logged by Go's server, as often as
// a client sends them while one of its streams stays open. They are
// control frames (a real client resets each stream at most once, paid
// for by its HEADERS, and goes away once), cut once past the budget.
func TestResetAndGoAwayFloodsAreCut(t *testing.T) {
	s := startServer(t)
	for _, f := range []struct {
		name  string
		typ   uint8
		write func(fr *http2.Framer) error
	}{
		{"RST_STREAM", typeRSTStream, func(fr *http2.Framer) error { return fr.WriteRSTStream(1, http2.ErrCodeCancel) }},
		{"GOAWAY", typeGoAway, func(fr *http2.Framer) error { return fr.WriteGoAway(1, http2.ErrCodeInternal, nil) }},
	} {
		t.Run(f.name, func(t *testing.T) {
			before := len(s.flooded())
			c := dial(t, s.addr)
			if status := c.get(t, 1, "/"); status != "200" {
				t.Fatalf("status %q, want 200", status)
			}
			// A stream left open (a POST whose body never ends) keeps
			// the server reading.
			c.post(t, 3, "/")
			go func() {
				for range 2 * Burst {
					if f.write(c.fr) != nil {
						return
					}
				}
			}()
			c.readsUntilEnd(t)
			got := s.flooded()
			if len(got) != before+1 || got[before] != f.typ {
				t.Errorf("cut for %v, want one cut for %s", got[before:], FrameName(f.typ))
			}
		})
	}
}
