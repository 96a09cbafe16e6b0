// Package sockio reads and writes TCP connections with raw system calls
// made inside syscall.RawConn's callbacks, for Levee's data plane (the
// router/httpx/server server and router's backend client).
package sockio

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// Socket reads and writes a TCP connection with raw system calls made
// inside syscall.RawConn's callbacks, instead of through net.Conn.
//
// Why: net.Conn's Read and Write tell the Go scheduler they are in a
// system call. A write to a loopback or LAN peer does the delivery work in
// the kernel and can take tens of microseconds; when one lasts longer than
// the runtime monitor's tick (20 µs), the monitor hands the goroutine's P
// to another thread, which the kernel must wake and later put back to
// sleep. On a proxy with one core per process that is two context switches
// for nothing. The socket is non-blocking, so these calls never block:
// they return EAGAIN, and the callback then returns false to wait for
// readiness through the poller as net.Conn does (deadlines included).
//
// Errors are what net.Conn returns: io.EOF, *net.OpError wrapping the
// system call's error (Op "read" or "write"), and the poller's deadline
// and closed-connection errors (os.ErrDeadlineExceeded, net.ErrClosed).
//
// A Socket is used by one reader and one writer at a time (RawConn
// serialises each direction).
type Socket struct {
	rc syscall.RawConn

	rbuf []byte
	rn   int
	rerr error
	rfn  func(fd uintptr) bool
	// tfn is readOnce that does not wait (TryRead); rdyfn waits once
	// for readability (WaitReadable).
	tfn    func(fd uintptr) bool
	waited bool
	peek   [1]byte
	rdyfn  func(fd uintptr) bool

	wbuf []byte
	wn   int
	werr error
	wfn  func(fd uintptr) bool
}

// New returns a Socket for c, or nil when c is not a socket the
// runtime's poller manages (then use c itself).
func New(c net.Conn) *Socket {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	s := &Socket{rc: rc}
	// The callbacks are made once: a closure per call would allocate.
	s.rfn = s.readOnce
	s.tfn = s.readNow
	s.rdyfn = s.readyAfterWait
	s.wfn = s.writeSome
	return s
}

// Control runs f with the socket's descriptor, which stays open while f
// runs (syscall.RawConn.Control).
func (s *Socket) Control(f func(fd uintptr)) error { return s.rc.Control(f) }

// Read reads into p like net.Conn.Read.
func (s *Socket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rbuf, s.rn, s.rerr = p, 0, nil
	err := s.rc.Read(s.rfn)
	n, rerr := s.rn, s.rerr
	s.rbuf = nil
	if err != nil {
		return n, err
	}
	return n, rerr
}

// TryRead reads into p like Read, but when nothing is ready to be read it
// returns ErrWouldBlock at once instead of waiting.
func (s *Socket) TryRead(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.rbuf, s.rn, s.rerr = p, 0, nil
	err := s.rc.Read(s.tfn)
	n, rerr := s.rn, s.rerr
	s.rbuf = nil
	if err != nil {
		return n, err
	}
	return n, rerr
}

func (s *Socket) readNow(fd uintptr) bool {
	if !s.readOnce(fd) {
		s.rerr = ErrWouldBlock
	}
	return true
}

// WaitReadable waits, within the read deadline, until a byte is ready to
// be read (or the peer has closed, or the socket failed: the read that
// follows reports it), without reading and without a buffer: a connection
// with nothing to read can give its buffer back while it waits. It costs
// one peek (recv with MSG_PEEK) more than a read that waits: the poller
// forgets readiness when a wait begins (it is edge-triggered), so the
// socket must be asked once before waiting. A wake-up may be spurious; the
// Read that follows then waits as usual.
func (s *Socket) WaitReadable() error {
	s.waited = false
	return s.rc.Read(s.rdyfn)
}

func (s *Socket) readyAfterWait(fd uintptr) bool {
	if s.waited {
		return true
	}
	for {
		_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&s.peek[0])), 1,
			syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			s.waited = true
			return false // wait for readability (or the deadline)
		}
		return true
	}
}

func (s *Socket) readOnce(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&s.rbuf[0])), uintptr(len(s.rbuf)))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false // wait for readability (or the deadline)
		case e != 0:
			s.rerr = &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", e)}
		case n == 0:
			s.rerr = io.EOF
		default:
			s.rn = int(n)
		}
		return true
	}
}

// Write writes all of p like net.Conn.Write.
func (s *Socket) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.wbuf, s.wn, s.werr = p, 0, nil
	err := s.rc.Write(s.wfn)
	n, werr := s.wn, s.werr
	s.wbuf = nil
	if err != nil {
		return n, err
	}
	return n, werr
}

func (s *Socket) writeSome(fd uintptr) bool {
	for s.wn < len(s.wbuf) {
		rest := s.wbuf[s.wn:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return false // wait for writability (or the deadline)
		case e != 0:
			s.werr = &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", e)}
			return true
		}
		s.wn += int(n)
	}
	return true
}
