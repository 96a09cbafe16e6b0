// Package h2guard bounds the HTTP/2 frames a client may send that ask the
// server for work without asking for a response: SETTINGS, WINDOW_UPDATE,
// PRIORITY, PING, RST_STREAM, GOAWAY and frames of unknown types (RFC
// 9113 4.1: an unknown type is ignored, but it is still read and parsed).
// Each costs the server
// a little (a SETTINGS is applied and acknowledged, a PING answered), and
// none is ever refused by the protocol, so a client sending nothing else,
// as fast as it can, keeps a core busy per connection for as long as it
// likes (RFC 9113 10.5: "an endpoint MAY treat activity that is
// suspicious as a connection error of type ENHANCE_YOUR_CALM").
//
// Conn wraps one HTTP/2 connection (the plaintext under TLS) between the
// TLS layer and the HTTP/2 server, and reads the 9-byte header of every
// frame in both directions (after the client's 24-byte preface); payloads
// are skipped, never copied. Control frames draw on a budget of the
// connection:
//
//   - it starts at Burst frames;
//   - it refills with time, Refill frames a second, up to Burst (a
//     client's keep-alive PINGs on an idle connection);
//   - and with work, up to 16 × Burst: each HEADERS the client sends (a
//     request) adds PerRequest, each DATA frame the server sends adds 2
//     plus one per 2 KiB of payload (a client acknowledges what it reads
//     with a stream and a connection WINDOW_UPDATE, Go's client every
//     4 KiB, and may do so a whole flow-control window after the server
//     wrote it).
//
// A small DATA frame pays for itself only on a stream whose request is
// still being sent: one the client opened with a HEADERS that did not end
// it, and that neither side has ended or reset since (the guard keeps
// these, at most maxOpen; should the server reset more streams between
// two frames of the client than the guard can hold, it forgets them all
// rather than keep one it reset). On any other stream a DATA frame under
// SmallFragment bytes is a control frame: Go's server answers DATA on a
// closed stream with an RST_STREAM (STREAM_CLOSED) and a WINDOW_UPDATE
// giving the bytes back (RFC 9113 5.1, 6.9), two frames written for each
// one read, without end. A larger frame costs its sender what it costs
// the server, as a body does. What a real client sends on a closed stream
// is what it had in flight when the server reset it (an upload the
// server answered early): a window of body in frames of kilobytes.
//
// RST_STREAM and GOAWAY are control frames too: an RST_STREAM for a
// stream already closed is read and ignored (RFC 9113 5.1), a GOAWAY with
// an error code read and logged by Go's server, as often as a client
// sends them; a real client resets a stream at most once (paid for by its
// HEADERS, or by the DATA the server sent on it) and goes away once.
//
// A client past the budget is sent GOAWAY with ENHANCE_YOUR_CALM (when
// the server's output is between two frames; otherwise nothing more) and
// TLS's close_notify, what it still sends is read and discarded for at
// most a second, and the connection is closed. HEADERS and PUSH_PROMISE
// frames are never counted (a client's PUSH_PROMISE is a connection
// error, RFC 9113 8.4), nor are DATA and
// CONTINUATION frames that carry a request: requests and their bodies are
// not limited here (Go's HTTP/2 server bounds rapid resets, CONTINUATION
// floods and header sizes itself). Two frames carry nothing, or next to
// nothing, of one, and are counted as control frames: a DATA frame that
// does not end its stream and is empty, or padded and short enough to be
// all padding, and a CONTINUATION under SmallFragment bytes that does not
// end its header block (the empty-frame flood, CVE-2019-9518; Go's server
// parses them for free but without end, while a stream of the connection
// stays open). No client sends them: a body's last frame may be empty,
// but it ends the stream, clients do not pad, and they split a header
// block at the largest frame size the server allows (16 KiB at least,
// RFC 9113 4.2), so only a block's last fragment is short.
package h2guard

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The budget's defaults.
const (
	// Burst is the budget of a new connection, and its ceiling: a
	// browser's opening SETTINGS, WINDOW_UPDATE and PRIORITY frames are a
	// handful; a thousand is far past any client and still a few
	// milliseconds of CPU.
	Burst = 1000
	// Refill is what the budget regains per second of time.
	Refill = 20
	// PerRequest is what each HEADERS frame from the client adds (a
	// request may come with a PRIORITY or PRIORITY_UPDATE and window
	// updates for its body).
	PerRequest = 16
	// workCeiling is how far above Burst work may raise the budget, in
	// multiples of Burst: 16,000 frames acknowledge 64 MiB in Go's 4 KiB
	// steps, more than any client's flow-control window.
	workCeiling = 16
)

// SmallFragment is the size under which a CONTINUATION frame that does not
// end its header block, or a DATA frame on a stream no longer sending its
// request, is counted as a control frame: a client sending 1 KiB a frame
// reaches the header list limit (1 MiB) in a thousand, and pays for the
// server's answer to each frame with the bytes it sends.
const SmallFragment = 1024

// Frame flags (RFC 9113 6.1, 6.10).
const (
	flagEndStream  = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
)

// maxPadding is the most padding a frame carries (its Pad Length is one
// byte, RFC 9113 6.1): a padded DATA frame of maxPadding+1 bytes or fewer
// may carry no data at all.
const maxPadding = 255

// Frame types (RFC 9113 6, RFC 9218 7.1).
const (
	typeData         = 0x0
	typeHeaders      = 0x1
	typePriority     = 0x2
	typeRSTStream    = 0x3
	typeSettings     = 0x4
	typePushPromise  = 0x5
	typePing         = 0x6
	typeGoAway       = 0x7
	typeWindowUpdate = 0x8
	typeContinuation = 0x9
)

// errCodeEnhanceYourCalm is RFC 9113 7's ENHANCE_YOUR_CALM.
const errCodeEnhanceYourCalm = 0xb

// clientPrefaceLen is the length of "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".
const clientPrefaceLen = 24

// ErrFlood is what Read returns once the client has spent its budget.
var ErrFlood = errors.New("http2: control frames past the connection's budget (ENHANCE_YOUR_CALM)")

// Options tune a Conn; zero fields take the defaults above.
type Options struct {
	Burst      int64
	Refill     int64
	PerRequest int64
	// Now tells the time (nil: time.Now).
	Now func() time.Time
	// OnFlood is told, once, when the connection is cut, with the type of
	// the frame that passed the budget (nil: not told).
	OnFlood func(frameType uint8)
}

func (o Options) withDefaults() Options {
	if o.Burst <= 0 {
		o.Burst = Burst
	}
	if o.Refill <= 0 {
		o.Refill = Refill
	}
	if o.PerRequest <= 0 {
		o.PerRequest = PerRequest
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Conn is an HTTP/2 server connection whose client's control frames are
// budgeted (see the package doc). It passes ConnectionState through, so
// the HTTP/2 server still sees the TLS state it checks (RFC 9113 9.2).
type Conn struct {
	net.Conn
	tls        *tls.Conn
	closeWrite func() error // ends the server's side (close_notify, or TCP FIN)
	opts       Options

	// Read side (the server's one reading goroutine).
	in      frameReader
	tokens  int64
	last    time.Time
	lastID  uint32 // the highest stream the client opened
	flooded bool
	earned  atomic.Int64 // credit from the write side, collected by reads
	// open holds the streams whose request the client is still sending
	// (see the package doc); nil until the first such stream.
	open map[uint32]struct{}

	// The streams the server reset, from the write side to the read
	// side, which takes them out of open before it looks at each frame;
	// overflowed: more were reset than resets holds (maxOpen), and the
	// read side forgets every open stream rather than miss one.
	rmu        sync.Mutex
	resets     []uint32
	overflowed bool
	pending    atomic.Bool

	// Write side.
	wmu sync.Mutex
	out frameReader
}

// New wraps c, an HTTP/2 connection whose client preface has not been
// read yet.
func New(c *tls.Conn, opts Options) *Conn {
	opts = opts.withDefaults()
	return &Conn{Conn: c, tls: c, closeWrite: c.CloseWrite, opts: opts, in: frameReader{skip: clientPrefaceLen}, tokens: opts.Burst, last: opts.Now()}
}

// Plain is a guarded cleartext HTTP/2 connection (h2c with prior
// knowledge, RFC 9113 3.3): a Conn without ConnectionState, so that the
// HTTP/2 server does not take it for TLS.
type Plain struct {
	net.Conn // the connection's addresses and deadlines
	g        *Conn
}

// NewPlain wraps c, a cleartext HTTP/2 connection whose client preface
// has not been read yet.
func NewPlain(c net.Conn, opts Options) *Plain {
	opts = opts.withDefaults()
	g := &Conn{Conn: c, opts: opts, in: frameReader{skip: clientPrefaceLen}, tokens: opts.Burst, last: opts.Now(),
		closeWrite: func() error { return errors.New("h2guard: no half-close on this connection") }}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		g.closeWrite = cw.CloseWrite
	}
	return &Plain{Conn: c, g: g}
}

func (p *Plain) Read(b []byte) (int, error)  { return p.g.Read(b) }
func (p *Plain) Write(b []byte) (int, error) { return p.g.Write(b) }
func (p *Plain) Close() error                { return p.g.Close() }

// ConnectionState is the TLS connection's.
func (c *Conn) ConnectionState() tls.ConnectionState { return c.tls.ConnectionState() }

// Read reads from the connection and accounts for the frames read; past
// the budget it returns ErrFlood, having sent GOAWAY and closed.
func (c *Conn) Read(p []byte) (int, error) {
	if c.flooded {
		return 0, ErrFlood
	}
	n, err := c.Conn.Read(p)
	var flood uint8
	c.in.feed(p[:n], func(typ, flags uint8, length, stream uint32) bool {
		if c.pending.Load() {
			c.takeResets()
		}
		switch typ {
		case typeData:
			if c.requestData(flags, length, stream) {
				return true
			}
		case typeContinuation:
			if length >= SmallFragment || flags&flagEndHeaders != 0 {
				return true
			}
		case typePushPromise:
			return true // a connection error from a client (RFC 9113 8.4)
		case typeHeaders:
			c.headers(flags, stream)
			c.credit(c.opts.PerRequest)
			return true
		case typeRSTStream:
			delete(c.open, stream)
		}
		if c.spend() {
			return true
		}
		flood = typ
		return false
	})
	if c.in.stopped {
		c.cut(flood)
		return 0, ErrFlood
	}
	return n, err
}

// maxOpen bounds the streams a connection's guard keeps as open, far
// above the concurrent streams Go's server allows (250 by default); the
// DATA of a stream past it counts as control frames.
const maxOpen = 1024

// headers takes note of a HEADERS frame on stream: a new stream whose
// request goes on (no END_STREAM) is open; trailers end one.
func (c *Conn) headers(flags uint8, stream uint32) {
	if flags&flagEndStream != 0 {
		delete(c.open, stream)
	} else if stream > c.lastID {
		if c.open == nil {
			c.open = make(map[uint32]struct{})
		}
		if len(c.open) < maxOpen {
			c.open[stream] = struct{}{}
		}
	}
	c.lastID = max(c.lastID, stream)
}

// requestData reports whether a DATA frame carries a request's body (it
// is free) rather than being a control frame: on an open stream, the
// frame ends it or carries data (an empty or padding-only frame that
// does not end its stream carries nothing, CVE-2019-9518); on any other,
// it is at least SmallFragment bytes long.
func (c *Conn) requestData(flags uint8, length, stream uint32) bool {
	if _, ok := c.open[stream]; !ok {
		return length >= SmallFragment
	}
	if flags&flagEndStream != 0 {
		delete(c.open, stream)
		return true
	}
	return length > 0 && (flags&flagPadded == 0 || length > maxPadding+1)
}

// takeResets takes the streams the server reset out of open.
func (c *Conn) takeResets() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.overflowed {
		clear(c.open)
		c.overflowed = false
	}
	for _, id := range c.resets {
		delete(c.open, id)
	}
	c.resets = c.resets[:0]
	c.pending.Store(false)
}

// spend takes one control frame from the budget, after adding what time
// and the server's DATA have earned since the last one.
func (c *Conn) spend() bool {
	if now := c.opts.Now(); now.After(c.last) {
		if refill := int64(now.Sub(c.last)) * c.opts.Refill / int64(time.Second); refill > 0 {
			c.last = c.last.Add(time.Duration(refill * int64(time.Second) / c.opts.Refill))
			if c.tokens < c.opts.Burst {
				c.tokens = min(c.tokens+refill, c.opts.Burst)
			}
		}
	}
	c.credit(c.earned.Swap(0))
	if c.tokens <= 0 {
		return false
	}
	c.tokens--
	return true
}

// credit adds work's share to the budget, up to workCeiling × Burst.
func (c *Conn) credit(n int64) {
	c.tokens = max(c.tokens, min(c.tokens+n, workCeiling*c.opts.Burst))
}

// drainLimit bounds how long a cut connection is read (and what it sends
// discarded) after its GOAWAY, so that the close does not reset the
// connection before the client has read the GOAWAY (a close with unread
// bytes sends a TCP RST, which discards what the client had not read).
const drainLimit = time.Second

// cut sends GOAWAY (ENHANCE_YOUR_CALM) and TLS's close_notify when the
// server's output is at a frame boundary, then closes the connection.
func (c *Conn) cut(frameType uint8) {
	c.flooded = true
	if c.opts.OnFlood != nil {
		c.opts.OnFlood(frameType)
	}
	// A write in progress to a client that does not read ends by this
	// deadline, and gives up the lock.
	_ = c.Conn.SetWriteDeadline(time.Now().Add(drainLimit))
	c.wmu.Lock()
	told := false
	if c.out.atBoundary() {
		var f [17]byte
		binary.BigEndian.PutUint32(f[0:4], 8<<8|typeGoAway) // length 8, type, flags 0
		binary.BigEndian.PutUint32(f[9:13], c.lastID&(1<<31-1))
		binary.BigEndian.PutUint32(f[13:17], errCodeEnhanceYourCalm)
		_, err := c.Conn.Write(f[:])
		told = err == nil && c.closeWrite() == nil
	}
	c.out.stopped = true // nothing more is written
	c.wmu.Unlock()
	if told {
		_ = c.Conn.SetReadDeadline(time.Now().Add(drainLimit))
		_, _ = io.Copy(io.Discard, c.Conn)
	}
	_ = c.Conn.Close()
}

// Write writes p and credits the budget with the DATA frames in it.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.out.stopped {
		return 0, net.ErrClosed
	}
	// The server's resets are told to the read side before the client
	// can see them, and so before the DATA it sends after them; a copy of
	// the reader finds them, since what is written may fall short of p.
	ahead := c.out
	ahead.feed(p, func(typ, _ uint8, _, stream uint32) bool {
		if typ == typeRSTStream {
			c.serverReset(stream)
		}
		return true
	})
	n, err := c.Conn.Write(p)
	c.out.feed(p[:n], func(typ, _ uint8, length, _ uint32) bool {
		if typ == typeData {
			c.earned.Add(2 + int64(length)/2048)
		}
		return true
	})
	return n, err
}

// serverReset hands a stream the server reset to the read side.
func (c *Conn) serverReset(stream uint32) {
	c.rmu.Lock()
	if len(c.resets) < maxOpen {
		c.resets = append(c.resets, stream)
	} else {
		c.overflowed = true
	}
	c.pending.Store(true)
	c.rmu.Unlock()
}

// FrameName names a frame type for logs: "SETTINGS", or "0x1f" for a
// type HTTP/2 does not define.
func FrameName(t uint8) string {
	switch t {
	case typeData:
		return "DATA"
	case typeContinuation:
		return "CONTINUATION"
	case typePriority:
		return "PRIORITY"
	case typeSettings:
		return "SETTINGS"
	case typePing:
		return "PING"
	case typeWindowUpdate:
		return "WINDOW_UPDATE"
	case typeRSTStream:
		return "RST_STREAM"
	case typeGoAway:
		return "GOAWAY"
	}
	const hex = "0123456789abcdef"
	return "0x" + string([]byte{hex[t>>4], hex[t&0xf]})
}

// frameReader finds the frame headers in a byte stream given in pieces.
type frameReader struct {
	skip    int64 // bytes of payload (or preface) still to pass over
	hdr     [9]byte
	have    int // header bytes gathered
	stopped bool
}

// feed passes b through; frame is called with each complete frame header
// and stops the reading by returning false.
func (r *frameReader) feed(b []byte, frame func(typ, flags uint8, length, stream uint32) bool) {
	for len(b) > 0 && !r.stopped {
		if r.skip > 0 {
			k := min(r.skip, int64(len(b)))
			r.skip -= k
			b = b[k:]
			continue
		}
		k := copy(r.hdr[r.have:], b)
		r.have += k
		b = b[k:]
		if r.have < len(r.hdr) {
			return
		}
		r.have = 0
		length := uint32(r.hdr[0])<<16 | uint32(r.hdr[1])<<8 | uint32(r.hdr[2])
		stream := binary.BigEndian.Uint32(r.hdr[5:9]) & (1<<31 - 1)
		r.skip = int64(length)
		if !frame(r.hdr[3], r.hdr[4], length, stream) {
			r.stopped = true
		}
	}
}

// atBoundary reports whether the stream so far ends at the end of a frame.
func (r *frameReader) atBoundary() bool { return r.skip == 0 && r.have == 0 }
