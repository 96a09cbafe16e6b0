package client

import (
	"context"
	"net"
	"sync"
)

// Why Standard watches its connections.
//
// net/http's Transport returns a connection to its idle pool as soon as an
// answer's body has been read, and only then, in the connection's read
// loop, looks at what its buffer still holds: bytes there that no request
// asked for are "unsolicited" and the connection is closed. A request that
// takes the connection from the pool in between is counted as expected
// first, and the read loop hands it those bytes as its answer: a backend
// that wrote two answers at once (or an answer and stray bytes) gives the
// second to another client. Levee's own client checks its buffer before a
// connection goes back to its pool; Standard cannot see the Transport's
// buffer, so it waits, before a request uses a pooled connection, until the
// read loop has made its choice: either it is waiting on the socket (its
// buffer was empty) or it has closed the connection (the Transport then
// sends the request on a new one, nothing having been written).

// The wait is bounded by the request's own context (the client's life):
// the read loop is a runnable goroutine of this process, so it settles
// within a goroutine switch. No limit of Levee's own ends it early, since
// going on unsettled is exactly the race, and abandoning the request would
// fail it for a reason that is neither the client's nor the backend's;
// when the client goes away meanwhile, whatever the connection holds can
// reach nobody.

// watchedConn is a backend connection whose reads and close Standard can
// see.
type watchedConn struct {
	net.Conn

	mu      sync.Mutex
	reading bool          // a Read is waiting on the socket
	closed  bool          // Close was called
	wake    chan struct{} // closed at the next change, when someone waits
}

// watchDials wraps dial so that the connections it makes are watched.
func watchDials(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c}, nil
	}
}

func (c *watchedConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	c.reading = true
	c.wakeLocked()
	c.mu.Unlock()
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.reading = false
	c.mu.Unlock()
	return n, err
}

func (c *watchedConn) Close() error {
	c.mu.Lock()
	c.closed = true
	c.wakeLocked()
	c.mu.Unlock()
	return c.Conn.Close()
}

// wakeLocked wakes a waiter of settled; c.mu is held.
func (c *watchedConn) wakeLocked() {
	if c.wake != nil {
		close(c.wake)
		c.wake = nil
	}
}

// settled waits until the Transport's read loop of this pooled connection
// waits on the socket or has closed the connection, or until ctx ends.
func (c *watchedConn) settled(ctx context.Context) {
	for {
		c.mu.Lock()
		if c.reading || c.closed {
			c.mu.Unlock()
			return
		}
		if c.wake == nil {
			c.wake = make(chan struct{})
		}
		wake := c.wake
		c.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}
