package server

import (
	"errors"
	"time"
)

// Parking: an idle keep-alive connection without a goroutine.
//
// A connection waiting for its next request holds a goroutine, parked in
// the runtime's poller, whose stack (4 KiB or more) is most of what an
// idle connection costs once its buffers are given back (idle.go). A
// connection that has waited for at least ParkIdleAfter is parked
// instead: its goroutine ends, and the server's own poller (parkSet, an
// epoll set on Linux) starts a new one when the connection becomes
// readable, or closes it when its idle deadline passes. A busy connection
// never parks (its next request comes within the sweep), so the request
// path pays nothing but one atomic store per wait.
//
// The sweeper finds the connections to park: every ParkIdleAfter it looks
// at the connections waiting in the runtime's poller and asks those that
// have waited since its previous look to park, by moving their read
// deadline into the past (the only way to end a wait in the runtime's
// poller). The waiting goroutine sees the request (waitEvicting) rather
// than a timeout, parks the connection and returns; on resumption the
// idle deadline is set again.

// Wait states of a connection (conn.waiting).
const (
	waitBusy     int32 = iota // reading or serving, not waiting
	waitPoller                // waiting for readability in the runtime's poller
	waitEvicting              // the sweeper asked the wait to end and park
)

// defaultParkIdleAfter is ParkIdleAfter's zero value.
const defaultParkIdleAfter = time.Second

// errPark is readRequest's answer when the connection was parked: its
// goroutine ends without closing it.
var errPark = errors.New("server: connection parked")

func (s *Server) parkIdleAfter() time.Duration {
	if s.ParkIdleAfter == 0 {
		return defaultParkIdleAfter
	}
	return s.ParkIdleAfter
}

// startParkingLocked starts the server's poller and sweeper on its
// first listener, unless parking is off or not supported here. It runs
// under s.mu.
func (s *Server) startParkingLocked() {
	if s.parkTried || s.parkIdleAfter() < 0 || s.PlainSocketIO {
		return
	}
	s.parkTried = true
	ps, err := newParkSet(s)
	if err != nil {
		if !errors.Is(err, errParkUnsupported) {
			s.logf("server: idle connections keep their goroutines: %v", err)
		}
		return
	}
	s.parks.Store(ps)
	s.sweepStop = make(chan struct{})
	go s.sweep(s.parkIdleAfter(), s.sweepStop)
}

// stopParking stops the sweeper and the poller, closing every parked
// connection. It must not run under s.mu.
func (s *Server) stopParking() {
	ps := s.parks.Swap(nil)
	if ps == nil {
		return
	}
	s.mu.Lock()
	close(s.sweepStop)
	s.mu.Unlock()
	ps.close()
}

// unpark takes c out of the server's poller, if it is parked there: it
// is being closed.
func (s *Server) unpark(c *conn) {
	if ps := s.parks.Load(); ps != nil && c.parkable {
		ps.forget(c)
	}
}

// sweep asks the connections that have waited for a request through a
// whole interval to park.
func (s *Server) sweep(every time.Duration, stop <-chan struct{}) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var batch []*conn
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		// s.mu is held only to copy the set: accepting and closing
		// connections wait for a copy of pointers, not for every
		// connection's deadline to be moved.
		s.mu.Lock()
		for c := range s.conns {
			batch = append(batch, c)
		}
		s.mu.Unlock()
		for _, c := range batch {
			c.sweepOnce()
		}
		clear(batch) // keeps no closed connection reachable
		batch = batch[:0]
	}
}

// sweepOnce asks c to park if it is waiting in the same wait as at the
// previous sweep.
func (c *conn) sweepOnce() {
	if !c.parkable {
		return
	}
	seq := c.waitSeq.Load()
	if c.waiting.Load() != waitPoller || seq != c.sweptSeq {
		c.sweptSeq = seq
		return
	}
	c.evictMu.Lock()
	if c.waiting.CompareAndSwap(waitPoller, waitEvicting) {
		_ = c.rwc.SetReadDeadline(aLongTimeAgo)
	}
	c.evictMu.Unlock()
}

// beginWait marks c as waiting in the runtime's poller.
func (c *conn) beginWait() {
	c.waitSeq.Add(1)
	c.waiting.Store(waitPoller)
}

// endWait reports whether the sweeper asked c to park during its wait.
// Then the wait's outcome (a timeout, most likely) does not count, and
// the deadline the sweeper set is over by the time it returns.
func (c *conn) endWait() (evicted bool) {
	if c.waiting.CompareAndSwap(waitPoller, waitBusy) {
		return false
	}
	c.evictMu.Lock() // the sweeper has set its deadline once this is free
	c.waiting.Store(waitBusy)
	c.evictMu.Unlock()
	return true
}

// park hands c, which waits for a request with no buffers, to the
// server's poller. It reports false when the server is shutting down
// (the connection is then closed as any other).
func (c *conn) park() bool {
	s := c.srv
	ps := s.parks.Load()
	if ps == nil || s.shutdown.Load() {
		return false
	}
	var wait time.Duration
	if !c.readDeadline.IsZero() {
		if wait = time.Until(c.readDeadline); wait <= 0 {
			return false // the idle deadline passed while it was evicted
		}
	}
	return ps.add(c, wait) == nil
}

// resume serves c again after its poller saw it readable: a new goroutine
// takes up the connection's loop where it parked.
func (c *conn) resume() {
	// The sweeper moved the deadline into the past; the idle deadline
	// is what bounds the read that follows.
	_ = c.rwc.SetReadDeadline(c.readDeadline)
	c.acquireBuffers()
	c.loop()
}

// expire closes c, parked past its idle deadline, as a connection
// whose wait timed out is closed.
func (c *conn) expire() {
	if !c.state.CompareAndSwap(stateIdle, stateClosed) {
		return // Shutdown or Close took it
	}
	c.srv.removeConn(c)
	_ = c.rwc.Close()
}
