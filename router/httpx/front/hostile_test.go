package front

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/levee-proxy/levee/router/httpx/internal/testcert"
)

// Hostile HTTP/2 clients, on every listener that serves HTTP/2, built as
// levee serve builds it: cleartext with prior knowledge (Plain and H2C)
// and TLS with ALPN h2 (TLS, where the frames reach the HTTP/2 server
// through crypto/tls), each with both servers (Options.Stdlib). The
// attacks are written frame by frame; each must end as documented
// (docs/tls.md, "HTTP/2"), and a well-behaved client with a stream in
// progress on another connection is served throughout.

// The test listeners' limits: levee serve's MaxHeaderBytes, and short
// waits, so that each bound shows within a test's time.
const (
	hostileMaxHeaderBytes = 1 << 20
	hostileWriteTimeout   = time.Second
	hostileIdleTimeout    = 3 * time.Second
	// hostileBound is the longest a cut may take past its cause: far
	// longer than any of them takes on an idle machine.
	hostileBound = 10 * time.Second
)

// hostileFront is one listener under attack and what its handler saw.
type hostileFront struct {
	addr string
	tls  bool

	called  atomic.Int64 // requests that reached the handler
	holding atomic.Int64 // /hold handlers running
	peak    atomic.Int64 // the most /hold handlers running at once
	release chan struct{}
	victim  chan struct{} // lets /stream finish
	endless chan error    // the write error that ended an /endless answer
	cuts    chan string   // Options.OnFloodCut
	closed  sync.Map      // remote address -> closed by the server
}

// handler answers /ok; holds /hold until the test ends, whatever the
// client does (a handler slow to notice a reset, as one waiting on a
// backend's dial); streams /stream in two parts, the second once victim
// is closed; and writes /endless until a write fails, giving each write
// hostileWriteTimeout as the proxy does (--response-write-timeout).
func (f *hostileFront) handler(w http.ResponseWriter, r *http.Request) {
	f.called.Add(1)
	switch r.URL.Path {
	case "/hold":
		n := f.holding.Add(1)
		for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
		}
		<-f.release
		f.holding.Add(-1)
	case "/stream":
		_, _ = io.WriteString(w, "first,")
		_ = http.NewResponseController(w).Flush()
		<-f.victim
		_, _ = io.WriteString(w, "last")
	case "/endless":
		rc := http.NewResponseController(w)
		chunk := bytes.Repeat([]byte("e"), 32<<10)
		for {
			_ = rc.SetWriteDeadline(time.Now().Add(hostileWriteTimeout))
			if _, err := w.Write(chunk); err != nil {
				f.endless <- err
				return
			}
		}
	default:
		_, _ = io.WriteString(w, "ok")
	}
}

// startHostileFront serves a listener over transport ("h2c" or "tls")
// with Levee's server or, with stdlib, net/http's.
func startHostileFront(t *testing.T, transport string, stdlib bool) *hostileFront {
	t.Helper()
	f := &hostileFront{tls: transport == "tls", release: make(chan struct{}), victim: make(chan struct{}),
		endless: make(chan error, 1), cuts: make(chan string, 16)}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &trackListener{Listener: raw, closed: &f.closed}
	f.addr = raw.Addr().String()
	o := Options{
		Handler: http.HandlerFunc(f.handler),
		Limits: Limits{HeaderTimeout: 10 * time.Second, IdleTimeout: hostileIdleTimeout,
			MaxHeaderBytes: hostileMaxHeaderBytes, WriteTimeout: hostileWriteTimeout},
		Stdlib:     stdlib,
		ErrorLog:   stdlog.New(io.Discard, "", 0),
		OnFloodCut: func(frame string) { f.cuts <- frame },
	}
	var srv Server
	var served net.Listener = ln
	if f.tls {
		// levee serve's TLS policy offers h2 first (certs.Policy).
		srv = TLS(o, testcert.Config(t, "h2.test", "h2", "http/1.1"))
	} else {
		srv = Plain(o)
		served = H2C(ln, o)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(served) }()
	t.Cleanup(func() {
		close(f.release)
		_ = srv.Close()
		<-done
	})
	return f
}

// trackListener records the connections the server closed, by their
// remote address (the client's local one).
type trackListener struct {
	net.Listener
	closed *sync.Map
}

func (l *trackListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &trackConn{Conn: c, closed: l.closed}, nil
}

type trackConn struct {
	net.Conn
	closed *sync.Map
}

func (c *trackConn) Close() error {
	c.closed.Store(c.RemoteAddr().String(), true)
	return c.Conn.Close()
}

func (c *trackConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// serverClosed waits, for at most within, for the server to close the
// connection whose client end is local.
func (f *hostileFront) serverClosed(t *testing.T, local net.Addr, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if _, ok := f.closed.Load(local.String()); ok {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling, with a deadline
	}
	t.Fatalf("the server has not closed the connection after %v", within)
}

// rawH2 is a client connection that writes frames as told.
type rawH2 struct {
	conn net.Conn
	fr   *http2.Framer
	enc  *hpack.Encoder
	buf  bytes.Buffer
}

// dial opens an HTTP/2 connection to f (over TLS, checking ALPN chose
// h2) and sends the preface and SETTINGS, announcing window as the
// streams' initial flow-control window.
func (f *hostileFront) dial(t *testing.T, window uint32) *rawH2 {
	t.Helper()
	var conn net.Conn
	var err error
	if f.tls {
		var tc *tls.Conn
		tc, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", f.addr,
			&tls.Config{ServerName: "h2.test", InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err == nil {
			if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
				tc.Close()
				t.Fatalf("ALPN chose %q, want h2", p)
			}
		}
		conn = tc
	} else {
		conn, err = net.DialTimeout("tcp", f.addr, 5*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	c := &rawH2{conn: conn, fr: http2.NewFramer(conn, conn)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.buf)
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: window}); err != nil {
		t.Fatal(err)
	}
	return c
}

// block HPACK-encodes name/value pairs.
func (c *rawH2) block(kv ...string) []byte {
	c.buf.Reset()
	for i := 0; i+1 < len(kv); i += 2 {
		_ = c.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return append([]byte(nil), c.buf.Bytes()...)
}

// request is a GET's header block for path.
func (c *rawH2) request(path string, kv ...string) []byte {
	return c.block(append([]string{":method", "GET", ":scheme", "https", ":authority", "h2.test", ":path", path}, kv...)...)
}

// get opens stream id with a GET of path.
func (c *rawH2) get(id uint32, path string) error {
	return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.request(path), EndStream: true, EndHeaders: true})
}

// outcome is what a client read of a connection before it ended.
type outcome struct {
	goaway  *http2.ErrCode    // the GOAWAY's code, when one came
	status  map[uint32]string // :status per stream
	reset   map[uint32]http2.ErrCode
	data    int // DATA payload bytes
	endedIn time.Duration
}

// read reads frames until stop says so (it sees each frame) or the
// connection ends; it fails the test when neither comes within
// hostileBound. It writes nothing (an attack may be writing): the
// server's SETTINGS go unacknowledged, which Go's server tolerates.
func (c *rawH2) read(t *testing.T, stop func(*outcome, http2.Frame) bool) *outcome {
	t.Helper()
	start := time.Now()
	_ = c.conn.SetReadDeadline(start.Add(hostileBound))
	o := &outcome{status: map[uint32]string{}, reset: map[uint32]http2.ErrCode{}}
	for {
		fr, err := c.fr.ReadFrame()
		if err != nil {
			o.endedIn = time.Since(start)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("the connection neither ended nor answered within %v (%+v)", hostileBound, o)
			}
			return o
		}
		switch fr := fr.(type) {
		case *http2.MetaHeadersFrame:
			o.status[fr.StreamID] = fr.PseudoValue("status")
		case *http2.DataFrame:
			o.data += len(fr.Data())
		case *http2.RSTStreamFrame:
			o.reset[fr.StreamID] = fr.ErrCode
		case *http2.GoAwayFrame:
			code := fr.ErrCode
			o.goaway = &code
		}
		if stop != nil && stop(o, fr) {
			return o
		}
	}
}

// untilEnd reads until the connection ends.
func (c *rawH2) untilEnd(t *testing.T) *outcome { t.Helper(); return c.read(t, nil) }

// wantGoAway fails unless the connection got GOAWAY with code.
func (o *outcome) wantGoAway(t *testing.T, code http2.ErrCode) {
	t.Helper()
	if o.goaway == nil || *o.goaway != code {
		t.Fatalf("GOAWAY %v, want %v", o.goaway, code)
	}
}

// victim is a well-behaved client with a stream in progress on its own
// connection: its first part read, the second still to come.
type victim struct {
	client *http.Client
	resp   *http.Response
	url    string
}

func (f *hostileFront) startVictim(t *testing.T) *victim {
	t.Helper()
	var p http.Protocols
	tr := &http.Transport{Protocols: &p, TLSClientConfig: &tls.Config{ServerName: "h2.test", InsecureSkipVerify: true}}
	v := &victim{client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	if f.tls {
		p.SetHTTP2(true)
		v.url = "https://" + f.addr
	} else {
		p.SetUnencryptedHTTP2(true)
		v.url = "http://" + f.addr
	}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := v.client.Get(v.url + "/stream")
	if err != nil {
		t.Fatalf("the victim's request: %v", err)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("the victim speaks %s, want HTTP/2", resp.Proto)
	}
	first := make([]byte, len("first,"))
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("the victim's first part: %v", err)
	}
	v.resp = resp
	return v
}

// finish lets the victim's stream end and checks it ended whole, then
// that the victim's connection serves a new request.
func (v *victim) finish(t *testing.T, f *hostileFront) {
	t.Helper()
	close(f.victim)
	rest, err := io.ReadAll(v.resp.Body)
	v.resp.Body.Close()
	if err != nil || string(rest) != "last" {
		t.Fatalf("the victim's stream in progress: %q, %v; want \"last\"", rest, err)
	}
	resp, err := v.client.Get(v.url + "/ok")
	if err != nil {
		t.Fatalf("the victim's next request: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("the victim's next request: %d %q", resp.StatusCode, body)
	}
}
