package conformance

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// rawClient is one TCP (or TLS) connection to Levee's proxy listener. Every read
// has a deadline; everything received is kept for failure messages.
type rawClient struct {
	c  net.Conn
	br *bufio.Reader

	mu    sync.Mutex
	got   []byte // the first maxKept bytes received
	total int64  // every byte received
}

const maxKept = 1 << 20

// dialRaw connects to addr; with sni, over TLS (HTTP/1.1 by ALPN, for
// that server name, any certificate accepted).
func dialRaw(addr, sni string) (*rawClient, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	if sni != "" {
		tc := tls.Client(c, &tls.Config{ServerName: sni, InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.Handshake(); err != nil {
			c.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		_ = tc.SetDeadline(time.Time{})
		c = tc
	}
	rc := &rawClient{c: c}
	rc.br = bufio.NewReader(clientTee{rc})
	return rc, nil
}

type clientTee struct{ rc *rawClient }

func (t clientTee) Read(p []byte) (int, error) {
	n, err := t.rc.c.Read(p)
	t.rc.mu.Lock()
	if keep := min(n, maxKept-len(t.rc.got)); keep > 0 {
		t.rc.got = append(t.rc.got, p[:keep]...)
	}
	t.rc.total += int64(n)
	t.rc.mu.Unlock()
	return n, err
}

// received is what the client read from the connection so far (the
// first MiB of it).
func (c *rawClient) received() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.got)
}

// receivedCount is how many bytes the client read.
func (c *rawClient) receivedCount() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// send writes s (with a deadline).
func (c *rawClient) send(s string) error {
	_ = c.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	_, err := c.c.Write([]byte(s))
	return err
}

// final reads responses until a final one (status >= 200, or 101),
// within timeout, and returns the interim (1xx) ones before it.
func (c *rawClient) final(method string, timeout time.Duration) (interim []*message, m *message, err error) {
	deadline := time.Now().Add(timeout)
	for {
		_ = c.c.SetReadDeadline(deadline)
		m, err := readResponse(c.br, method)
		if err != nil || m.status >= 200 || m.status == 101 {
			return interim, m, err
		}
		interim = append(interim, m)
	}
}

// ends reports whether the connection ends (EOF or reset) within timeout,
// with the bytes that arrived before the end.
func (c *rawClient) ends(timeout time.Duration) (ended bool, extra []byte) {
	_ = c.c.SetReadDeadline(time.Now().Add(timeout))
	buf := make([]byte, 32<<10)
	for {
		n, err := c.br.Read(buf)
		if len(extra) < 64<<10 {
			extra = append(extra, buf[:n]...)
		}
		if err != nil {
			return !isTimeout(err), extra
		}
	}
}

func (c *rawClient) close() { _ = c.c.Close() }

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
