package server

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// errParkUnsupported: this system has no parkSet (idle connections keep
// their goroutines).
var errParkUnsupported = errors.New("server: parking idle connections is not supported on this system")

// parkSet is the server's own poller for parked connections: an epoll
// set in which each parked connection's socket waits, level-triggered
// and one-shot (epoll(7)), so that readiness that came before the socket
// was added is reported too, and a socket is reported once per parking.
// One goroutine waits on the set and starts a goroutine per connection
// that becomes readable; an eventfd in the set wakes it to stop. A
// connection's idle deadline is a timer that closes it.
type parkSet struct {
	srv  *Server
	epfd int
	stop int // eventfd: written to end the wait loop

	mu     sync.Mutex
	parked map[uint64]*conn
	next   uint64
	closed bool
	done   chan struct{}
	// parkings counts the connections parked so far.
	parkings int
}

// stopToken is the eventfd's token in the set; connections' tokens start
// at 1.
const stopToken = 0

func newParkSet(s *Server) (*parkSet, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setToken(&ev, stopToken)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		_ = unix.Close(efd)
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("epoll_ctl eventfd: %w", err)
	}
	p := &parkSet{srv: s, epfd: epfd, stop: efd, parked: map[uint64]*conn{}, next: stopToken + 1, done: make(chan struct{})}
	go p.run()
	return p, nil
}

// setToken and token keep a 64-bit token in an event's data (the Fd and
// Pad fields of x/sys/unix's EpollEvent on Linux).
func setToken(ev *unix.EpollEvent, t uint64) {
	ev.Fd = int32(uint32(t))
	ev.Pad = int32(uint32(t >> 32))
}

func token(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// add parks c until its socket is readable, or for at most wait (zero: no
// limit), after which it is closed.
func (p *parkSet) add(c *conn, wait time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return net.ErrClosed
	}
	t := p.next
	p.next++
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT}
	setToken(&ev, t)
	op := unix.EPOLL_CTL_MOD
	if !c.inParkSet {
		op = unix.EPOLL_CTL_ADD
	}
	var ctlErr error
	// Control holds the socket open while its descriptor is used.
	if err := c.sock.Control(func(fd uintptr) { ctlErr = unix.EpollCtl(p.epfd, op, int(fd), &ev) }); err != nil {
		return err
	}
	if ctlErr != nil {
		return fmt.Errorf("epoll_ctl %s: %w", c.remoteAddr, ctlErr)
	}
	c.inParkSet = true
	c.parkToken = t
	p.parked[t] = c
	p.parkings++
	p.srv.idleBare.Add(1)
	if wait > 0 {
		if c.parkTimer == nil {
			c.parkTimer = time.AfterFunc(wait, func() { p.expire(c) })
		} else {
			c.parkTimer.Reset(wait)
		}
	}
	return nil
}

// takeLocked removes c from the set; it reports false if c was not
// parked (its timer, a readiness and a close race: the first wins).
func (p *parkSet) takeLocked(c *conn) bool {
	if p.parked[c.parkToken] != c {
		return false
	}
	delete(p.parked, c.parkToken)
	if c.parkTimer != nil {
		c.parkTimer.Stop()
	}
	p.srv.idleBare.Add(-1)
	return true
}

// expire closes c when its idle deadline passed while parked.
func (p *parkSet) expire(c *conn) {
	p.mu.Lock()
	ok := p.takeLocked(c)
	p.mu.Unlock()
	if ok {
		c.expire()
	}
}

// forget removes c from the set, if parked: Shutdown or Close is closing
// it.
func (p *parkSet) forget(c *conn) {
	p.mu.Lock()
	p.takeLocked(c)
	p.mu.Unlock()
}

// run waits for parked sockets to become readable and resumes their
// connections, until close.
func (p *parkSet) run() {
	defer close(p.done)
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			p.srv.logf("server: epoll_wait of parked connections: %v", err)
			return
		}
		for i := range events[:n] {
			t := token(&events[i])
			if t == stopToken {
				return
			}
			p.mu.Lock()
			c := p.parked[t]
			ok := c != nil && p.takeLocked(c)
			p.mu.Unlock()
			if ok {
				go c.resume()
			}
		}
	}
}

// close ends the wait loop and closes every parked connection.
func (p *parkSet) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	left := make([]*conn, 0, len(p.parked))
	for _, c := range p.parked {
		if p.takeLocked(c) {
			left = append(left, c)
		}
	}
	p.mu.Unlock()
	var one [8]byte
	one[0] = 1
	_, _ = unix.Write(p.stop, one[:])
	<-p.done
	_ = unix.Close(p.stop)
	_ = unix.Close(p.epfd)
	for _, c := range left {
		c.expire()
	}
}

// count is how many connections are parked now, and how many times
// one was.
func (p *parkSet) count() (now, ever int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.parked), p.parkings
}
