package conformance

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// backend is a raw TCP backend: it records every byte it receives per
// connection, reads requests with the suite's strict reader to know where
// each ends, and answers each one with whatever bytes its script writes.
type backend struct {
	ln     net.Listener
	addr   string
	script func(x *exchange)
	opts   backendOpts

	mu      sync.Mutex
	conns   []*bconn
	reqs    []*breq       // every request read, in arrival order
	changed chan struct{} // closed and replaced on every change
}

type backendOpts struct {
	// getBodiesAreRequests reads what follows a GET's head as the next
	// request whatever its Content-Length says (Python's http.server).
	getBodiesAreRequests bool
}

// bconn is one connection Levee opened to the backend.
type bconn struct {
	idx int
	c   net.Conn

	// Guarded by backend.mu.
	raw        []byte    // every byte received, in order
	ended      bool      // Levee closed it (or reset it): a read failed
	endedAt    time.Time //
	readErr    error     //
	parseErr   error     // the bytes were not a well-framed request
	writeErr   error     // first failed write
	writeErrAt time.Time //
	written    int64     // bytes written
	upgradedAt int       // offset in raw where the raw (tunnel) mode began; -1 before
	held       []byte    // written when the next bytes arrive
	seq        int       // requests read so far
}

// breq is one request the backend read.
type breq struct {
	*message
	conn int       // its connection's index
	seq  int       // its index on that connection
	end  int       // offset in the connection's raw bytes just after it
	at   time.Time // when it was read to its end
}

// newBackend starts a backend on 127.0.0.1 answering each request with
// script (nil: the default answer) and closing everything when t ends.
func newBackend(t *testing.T, opts backendOpts, script func(x *exchange)) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if script == nil {
		script = (*exchange).answer
	}
	b := &backend{ln: ln, addr: ln.Addr().String(), script: script, opts: opts, changed: make(chan struct{})}
	go b.accept()
	t.Cleanup(b.close)
	return b
}

func (b *backend) close() {
	_ = b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		_ = c.c.Close()
	}
}

// signal wakes the waiters; b.mu is held.
func (b *backend) signal() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *backend) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		bc := &bconn{idx: len(b.conns), c: c, upgradedAt: -1}
		b.conns = append(b.conns, bc)
		b.signal()
		b.mu.Unlock()
		go b.serve(bc)
	}
}

// tee records what the connection's reader takes from the socket, and
// writes the held bytes once new bytes arrived.
type tee struct {
	b  *backend
	bc *bconn
}

func (r tee) Read(p []byte) (int, error) {
	n, err := r.bc.c.Read(p)
	r.b.mu.Lock()
	r.bc.raw = append(r.bc.raw, p[:n]...)
	var held []byte
	if n > 0 {
		held, r.bc.held = r.bc.held, nil
	}
	if err != nil && !r.bc.ended {
		r.bc.ended, r.bc.endedAt, r.bc.readErr = true, time.Now(), err
	}
	r.b.signal()
	r.b.mu.Unlock()
	if held != nil {
		(&exchange{b: r.b, bc: r.bc}).writeBytes(held)
	}
	return n, err
}

func (b *backend) serve(bc *bconn) {
	br := bufio.NewReaderSize(tee{b, bc}, 64<<10)
	drain := func() { _, _ = io.Copy(io.Discard, br) }
	for {
		m, err := readRequest(br, b.opts.getBodiesAreRequests)
		if err != nil {
			if !errors.Is(err, errEnded) {
				b.mu.Lock()
				bc.parseErr = err
				b.signal()
				b.mu.Unlock()
			}
			drain() // keep recording until Levee closes
			return
		}
		b.mu.Lock()
		r := &breq{message: m, conn: bc.idx, seq: bc.seq, end: len(bc.raw) - br.Buffered(), at: time.Now()}
		bc.seq++
		b.reqs = append(b.reqs, r)
		b.signal()
		b.mu.Unlock()
		x := &exchange{b: b, bc: bc, req: r}
		b.script(x)
		switch {
		case x.closed:
			drain()
			return
		case x.onRaw != nil:
			b.mu.Lock()
			bc.upgradedAt = r.end
			b.mu.Unlock()
			buf := make([]byte, 32<<10)
			for {
				n, err := br.Read(buf)
				if n > 0 {
					x.onRaw(x, buf[:n])
				}
				if err != nil {
					return
				}
			}
		}
	}
}

// exchange is one request as the backend's script sees it.
type exchange struct {
	b      *backend
	bc     *bconn
	req    *breq
	closed bool
	onRaw  func(x *exchange, data []byte)
}

// write sends s on the request's connection.
func (x *exchange) write(s string) error { return x.writeBytes([]byte(s)) }

func (x *exchange) writeBytes(p []byte) error {
	_ = x.bc.c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	n, err := x.bc.c.Write(p)
	x.b.mu.Lock()
	x.bc.written += int64(n)
	if err != nil && x.bc.writeErr == nil {
		x.bc.writeErr, x.bc.writeErrAt = err, time.Now()
	}
	x.b.signal()
	x.b.mu.Unlock()
	return err
}

// answer writes the default answer: 200 with the body "answer:<target>",
// so that a client can tell whose answer it got.
func (x *exchange) answer() { x.write(answerFor(x.req.target, x.req.method == "HEAD")) }

func answerFor(target string, head bool) string {
	body := "answer:" + target
	s := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n", len(body))
	if head {
		return s
	}
	return s + body
}

// close closes the connection instead of reading further requests.
func (x *exchange) close() {
	x.closed = true
	_ = x.bc.c.Close()
}

// hold writes s when the next bytes arrive on this connection (a backend
// whose late answer lands on whatever request comes next).
func (x *exchange) hold(s string) {
	x.b.mu.Lock()
	x.bc.held = append(x.bc.held, s...)
	x.b.mu.Unlock()
}

// tunnel stops reading HTTP on this connection after this request: every
// later byte goes to onRaw (nil: only recorded), as after a 101.
func (x *exchange) tunnel(onRaw func(x *exchange, data []byte)) {
	if onRaw == nil {
		onRaw = func(*exchange, []byte) {}
	}
	x.onRaw = onRaw
}

// waitFor waits until cond (called with b.mu held) is true, or timeout.
func (b *backend) waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ok, ch := cond(), b.changed
		b.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// waitRequests waits until the backend has read n requests and returns
// them (fewer on timeout).
func (b *backend) waitRequests(n int, timeout time.Duration) []*breq {
	b.waitFor(timeout, func() bool { return len(b.reqs) >= n })
	return b.requests()
}

func (b *backend) requests() []*breq {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*breq(nil), b.reqs...)
}

// lines is "METHOD target" of every request read, in order.
func (b *backend) lines() []string {
	var out []string
	for _, r := range b.requests() {
		out = append(out, r.line())
	}
	return out
}

func (b *backend) connCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// connState is a copy of a connection's record.
type connState struct {
	raw        string
	ended      bool
	endedAt    time.Time
	parseErr   error
	writeErr   error
	writeErrAt time.Time
	written    int64
	upgradedAt int
}

func (b *backend) conn(i int) connState {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.conns[i]
	return connState{string(c.raw), c.ended, c.endedAt, c.parseErr, c.writeErr, c.writeErrAt, c.written, c.upgradedAt}
}

// dump describes every connection with its exact bytes.
func (b *backend) dump() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	fmt.Fprintf(&s, "backend %s: %d connection(s), requests %q\n", b.addr, len(b.conns), linesOf(b.reqs))
	for _, c := range b.conns {
		raw := c.raw
		const max = 4 << 10
		prefix := ""
		if len(raw) > max {
			raw, prefix = raw[len(raw)-max:], fmt.Sprintf("(%d bytes, the last %d) ...", len(c.raw), max)
		}
		fmt.Fprintf(&s, "  conn %d: ended=%v write-err=%v parse-err=%v received %s%q\n", c.idx, c.ended, c.writeErr, c.parseErr, prefix, raw)
	}
	return s.String()
}

func linesOf(reqs []*breq) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.line())
	}
	return out
}
