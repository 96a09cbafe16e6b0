package front

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/levee-proxy/levee/router/httpx/h2guard"
)

// hostileAttacks are the attacks and their documented outcomes.
var hostileAttacks = []struct {
	name string
	run  func(t *testing.T, f *hostileFront)
}{
	// Rapid reset (CVE-2023-44487): a stream opened and reset at once,
	// without end. Go's HTTP/2 server runs at most
	// SETTINGS_MAX_CONCURRENT_STREAMS (250) handlers of a connection,
	// reset streams' included, and past 4 × 250 waiting to start it
	// ends the connection with GOAWAY ENHANCE_YOUR_CALM.
	{"rapid reset", func(t *testing.T, f *hostileFront) {
		c := f.dial(t, 65535)
		go func() {
			for id := uint32(1); id < 2*3000; id += 2 {
				if c.get(id, "/hold") != nil || c.fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
					return
				}
			}
		}()
		c.untilEnd(t).wantGoAway(t, http2.ErrCodeEnhanceYourCalm)
		if p := f.peak.Load(); p > 250 {
			t.Fatalf("%d handlers ran at once for one connection, want at most 250", p)
		}
		if f.called.Load() > 250+1 { // and the victim's
			t.Fatalf("%d requests reached the handler, want at most 250", f.called.Load()-1)
		}
	}},
	// CONTINUATION flood (CVE-2024-27316, CVE-2023-45288): a header block
	// that never ends. Go's HTTP/2 server stops decoding past the header
	// list limit (MaxHeaderBytes, SETTINGS_MAX_HEADER_LIST_SIZE) and ends
	// the connection with GOAWAY PROTOCOL_ERROR at the next fragment;
	// the handler never sees the request.
	{"CONTINUATION flood", func(t *testing.T, f *hostileFront) {
		c := holding(t, f)
		before := f.called.Load()
		value := strings.Repeat("c", 8<<10)
		var sent atomic.Int64
		go func() {
			if c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: c.request("/ok")}) != nil {
				return
			}
			for {
				frag := c.block("x-flood", value)
				if c.fr.WriteContinuation(3, false, frag) != nil {
					return
				}
				sent.Add(int64(len(frag)))
			}
		}()
		o := c.untilEnd(t)
		o.wantGoAway(t, http2.ErrCodeProtocol)
		if f.called.Load() != before {
			t.Fatal("an endless header block reached the handler")
		}
		t.Logf("%d KiB of CONTINUATION written before the end (the limit is %d KiB; the rest is socket buffers)", sent.Load()>>10, hostileMaxHeaderBytes>>10)
	}},
	// SETTINGS and PING floods: past the control-frame budget
	// (h2guard.Burst with the clock still), the connection is cut with
	// GOAWAY ENHANCE_YOUR_CALM when the server's output is between two
	// frames, and the cut is reported with the frame's name.
	{"SETTINGS flood", func(t *testing.T, f *hostileFront) {
		floodCut(t, f, f.dial(t, 65535), "SETTINGS", func(fr *http2.Framer) error {
			return fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65535})
		})
	}},
	{"PING flood", func(t *testing.T, f *hostileFront) {
		floodCut(t, f, f.dial(t, 65535), "PING", func(fr *http2.Framer) error { return fr.WritePing(false, [8]byte{7}) })
	}},
	// Empty-frame floods (CVE-2019-9518) while a stream is open, so that
	// the idle timeout does not end them: empty DATA frames that do not
	// end a body, and a header block fed one byte a CONTINUATION (a
	// literal of 1 MiB announced, under the header list limit for a
	// million frames). Each costs Go's server a frame's parse and nothing
	// else; h2guard counts them as control frames and cuts the flood.
	{"empty DATA flood", func(t *testing.T, f *hostileFront) {
		c := f.dial(t, 65535)
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, EndHeaders: true,
			BlockFragment: c.block(":method", "POST", ":scheme", "https", ":authority", "h2.test", ":path", "/hold")}); err != nil {
			t.Fatal(err)
		}
		floodCut(t, f, c, "DATA", func(fr *http2.Framer) error { return fr.WriteData(1, false, nil) })
	}},
	{"CONTINUATION trickle", func(t *testing.T, f *hostileFront) {
		c := holding(t, f)
		// A literal field, new name "x", its value 1 MiB long (HPACK
		// integer, RFC 7541 5.1), of which only the first byte comes.
		block := append(c.request("/ok"), 0x00, 0x01, 'x', 0x7f)
		for v := 1<<20 - 127; ; v >>= 7 {
			if v < 128 {
				block = append(block, byte(v))
				break
			}
			block = append(block, byte(v&0x7f|0x80))
		}
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block}); err != nil {
			t.Fatal(err)
		}
		floodCut(t, f, c, "CONTINUATION", func(fr *http2.Framer) error { return fr.WriteContinuation(3, false, []byte("v")) })
	}},
	// A client granting no flow-control window takes no response bytes:
	// the stream is reset once a write has waited hostileWriteTimeout
	// (--response-write-timeout), and the connection stays.
	{"zero window", func(t *testing.T, f *hostileFront) {
		c := f.dial(t, 0)
		if err := c.get(1, "/endless"); err != nil {
			t.Fatal(err)
		}
		o := c.read(t, func(o *outcome, _ http2.Frame) bool { _, ok := o.reset[1]; return ok })
		if o.data != 0 {
			t.Fatalf("%d bytes sent past a zero window", o.data)
		}
		if o.status[1] != "200" {
			t.Fatalf("status %q before the reset, want 200", o.status[1])
		}
		if o.endedIn > hostileWriteTimeout+hostileBound/2 {
			t.Fatalf("reset after %v, want about %v", o.endedIn, hostileWriteTimeout)
		}
		select {
		case <-f.endless:
		case <-time.After(hostileBound):
			t.Fatal("the handler's write did not fail")
		}
		// The connection still serves.
		if err := c.get(3, "/ok"); err != nil {
			t.Fatal(err)
		}
		if o := c.read(t, func(o *outcome, _ http2.Frame) bool { return o.status[3] != "" }); o.status[3] != "200" {
			t.Fatalf("the next stream: status %q", o.status[3])
		}
	}},
	// A client that stops reading the connection altogether blocks the
	// server's one writer once the socket buffers are full, and with it
	// every frame of the connection, the RST_STREAM that a stream's
	// write deadline sends included: the answer's writes end, and the
	// connection is closed, once no byte could be written for
	// hostileWriteTimeout (--response-write-timeout), or, when the
	// writer was not blocked then, once idle for hostileIdleTimeout.
	{"never reads", func(t *testing.T, f *hostileFront) {
		c := f.dial(t, 1<<30)
		if err := c.fr.WriteWindowUpdate(0, 1<<30); err != nil {
			t.Fatal(err)
		}
		if err := c.get(1, "/endless"); err != nil {
			t.Fatal(err)
		}
		select {
		case <-f.endless:
		case <-time.After(hostileWriteTimeout + hostileBound):
			t.Fatal("the answer's writes did not end")
		}
		f.serverClosed(t, c.conn.LocalAddr(), hostileWriteTimeout+hostileIdleTimeout+hostileBound)
	}},
	// A header list over MaxHeaderBytes, ending in the frame that takes
	// it past: 431, without the handler, and the connection stays.
	{"oversized header list", func(t *testing.T, f *hostileFront) {
		c := holding(t, f)
		before := f.called.Load()
		value := strings.Repeat("o", 12<<10)
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: c.request("/ok")}); err != nil {
			t.Fatal(err)
		}
		// Each field is 12 KiB + 37 bytes of the list (name, value and
		// 32, RFC 9113 6.5.2); the last fragment's two take it past the
		// limit (MaxHeaderBytes + 320, x/net's allowance for 10 fields).
		per := 12<<10 + 40
		n := hostileMaxHeaderBytes / per
		for i := range n {
			if err := c.fr.WriteContinuation(3, false, c.block("x-big", value)); err != nil {
				t.Fatalf("fragment %d: %v", i, err)
			}
		}
		if err := c.fr.WriteContinuation(3, true, c.block("x-big", value, "x-big", value)); err != nil {
			t.Fatal(err)
		}
		o := c.read(t, func(o *outcome, _ http2.Frame) bool { return o.status[3] != "" })
		if o.status[3] != "431" {
			t.Fatalf("status %q, want 431 (GOAWAY %v)", o.status[3], o.goaway)
		}
		if f.called.Load() != before {
			t.Fatal("an oversized header list reached the handler")
		}
		if err := c.get(5, "/ok"); err != nil {
			t.Fatal(err)
		}
		if o := c.read(t, func(o *outcome, _ http2.Frame) bool { return o.status[5] != "" }); o.status[5] != "200" {
			t.Fatalf("the next stream: status %q", o.status[5])
		}
	}},
}

// holding dials f with stream 1 open (a /hold request, in its handler
// when holding returns): the connection is never idle, so that only the
// attack that follows can end it (not the idle timeout, on a machine slow
// enough to reach it first).
func holding(t *testing.T, f *hostileFront) *rawH2 {
	t.Helper()
	c := f.dial(t, 65535)
	held := f.holding.Load()
	if err := c.get(1, "/hold"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(hostileBound); f.holding.Load() == held; {
		if time.Now().After(deadline) {
			t.Fatalf("the /hold request did not reach the handler within %v", hostileBound)
		}
		time.Sleep(5 * time.Millisecond) // polling, with a deadline
	}
	return c
}

// floodCut sends write on c past the control-frame budget and checks
// the connection is cut and the cut reported as frame.
func floodCut(t *testing.T, f *hostileFront, c *rawH2, frame string, write func(*http2.Framer) error) {
	t.Helper()
	go func() {
		for range 2 * h2guard.Burst {
			if write(c.fr) != nil {
				return
			}
		}
	}()
	o := c.untilEnd(t)
	if o.goaway != nil && *o.goaway != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("GOAWAY %v, want ENHANCE_YOUR_CALM", *o.goaway)
	}
	select {
	case got := <-f.cuts:
		if got != frame {
			t.Fatalf("cut reported for %s, want %s", got, frame)
		}
	case <-time.After(hostileBound):
		t.Fatal("the connection ended, but not by the guard: no cut was reported")
	}
	f.serverClosed(t, c.conn.LocalAddr(), hostileBound)
}

// Every attack on every HTTP/2 listener: h2c and TLS, each with Levee's
// server and net/http's, the victim's stream in progress unaffected.
func TestHostileHTTP2Clients(t *testing.T) {
	for _, transport := range []string{"h2c", "tls"} {
		for _, server := range []string{"levee", "stdlib"} {
			t.Run(transport+"/"+server, func(t *testing.T) {
				for _, a := range hostileAttacks {
					t.Run(a.name, func(t *testing.T) {
						f := startHostileFront(t, transport, server == "stdlib")
						v := f.startVictim(t)
						a.run(t, f)
						v.finish(t, f)
					})
				}
			})
		}
	}
}
