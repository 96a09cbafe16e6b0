package server

import (
	"bufio"
	"errors"

	"github.com/levee-proxy/levee/router/httpx/internal/sockio"
)

// A connection's buffers: taken from the pools when it starts and when
// a request arrives after an idle wait, given back while it is idle and
// when it ends.

// acquireBuffers takes the connection's read and write buffers from the
// pools (or makes them).
func (c *conn) acquireBuffers() {
	if v := bufReaders.Get(); v != nil {
		c.br = v.(*bufio.Reader)
		c.br.Reset(&c.cr)
	} else {
		c.br = bufio.NewReaderSize(&c.cr, bufferSize)
	}
	if v := bufWriters.Get(); v != nil {
		c.bw = v.(*bufio.Writer)
		c.bw.Reset(c.out)
	} else {
		c.bw = bufio.NewWriterSize(c.out, bufferSize)
	}
}

func (c *conn) release() {
	c.br.Reset(nil)
	bufReaders.Put(c.br)
	c.bw.Reset(nil)
	bufWriters.Put(c.bw)
	c.br, c.bw = nil, nil
}

// forgetLastRequest drops what the connection still references of the
// request it served (its transaction, body and header map), so that an
// idle connection keeps none of it alive. It is called only when that
// request is over: its body was read to the end (or the connection would
// be closing), so a handler goroutine still holding the body gets EOF
// without touching the connection.
func (c *conn) forgetLastRequest() {
	c.watchMu.Lock()
	c.cur = nil
	c.watchMu.Unlock()
	c.lastBody = nil
	c.respHeader = nil
	c.pending = nil
}

// awaitRequest waits for the first byte of the connection's next request.
//
// A connection whose next request is already there (a pipelining or busy
// client) reads it at once, in one system call. One with nothing to read
// gives its 8 KiB of buffers back to the pools while it waits, and takes
// them again when a byte arrives, and drops what it kept of its last
// request: an idle keep-alive connection then holds no buffer, only its
// goroutine and its small conn (docs/performance.md,
// "Idle connections"). The extra work on that path is two pool
// operations and one peek (sockio.Socket.WaitReadable) besides the system
// calls of any read that must wait (a read that finds nothing, the
// poller's wait, the read). Without raw
// socket I/O (PlainSocketIO, or a connection that is not a socket) the
// buffers stay.
func (c *conn) awaitRequest() error {
	if c.sock == nil || c.bw.Buffered() > 0 {
		_, err := c.br.Peek(1)
		return err
	}
	c.cr.noWait = true
	_, err := c.br.Peek(1)
	c.cr.noWait = false
	if !errors.Is(err, sockio.ErrWouldBlock) {
		return err
	}
	c.forgetLastRequest()
	c.release()
	c.srv.idleBare.Add(1)
	if c.parkable {
		c.beginWait()
	}
	err = c.sock.WaitReadable()
	c.srv.idleBare.Add(-1)
	if c.parkable && c.endWait() {
		// The sweeper's request: this wait's outcome is its deadline.
		if c.park() {
			return errPark
		}
		c.acquireBuffers() // closed as after an idle timeout
		return errQuiet
	}
	c.acquireBuffers()
	if err != nil {
		return err
	}
	_, err = c.br.Peek(1)
	return err
}
