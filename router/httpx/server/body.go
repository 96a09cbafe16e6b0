package server

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// body is a request body read from the connection: Content-Length bytes
// straight from the buffered reader, a chunkedReader, or net/http's reader
// for any other framing. It records its end for the background read and
// sends 100 Continue on the first read when the client asked for it.
type body struct {
	ex     *transaction
	mu     sync.Mutex
	remain int64     // bytes left (fast path); -1 when src frames the body
	src    io.Reader // a chunkedReader or net/http's body reader
	eof    atomic.Bool
	closed atomic.Bool
	// err is the read error that ends the body; a timeout does not: a
	// later deadline lifts it, as with net/http's server.
	err error
	// wantsContinue: send "100 Continue" before the first read.
	wantsContinue bool
}

func (b *body) finished() bool { return b.eof.Load() }

func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed.Load() {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.eof.Load() {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if b.wantsContinue {
		b.wantsContinue = false
		b.ex.resp.sendContinue()
	}
	var n int
	var err error
	if b.src != nil {
		n, err = b.src.Read(p)
	} else {
		if int64(len(p)) > b.remain {
			p = p[:b.remain]
		}
		n, err = b.ex.c.br.Read(p)
		b.remain -= int64(n)
		switch {
		case b.remain == 0:
			err = io.EOF
		case err == io.EOF:
			err = io.ErrUnexpectedEOF
		}
	}
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		b.ex.c.bodyDone(b.ex)
	case err != nil && !isTimeout(err):
		b.err = err
	}
	return n, err
}

// waitReaders returns once no Read is running; with closed set, none
// starts after.
func (b *body) waitReaders() {
	b.mu.Lock()
	defer b.mu.Unlock()
}

// Close marks the body closed; the server deals with what is left of it.
func (b *body) Close() error {
	b.closed.Store(true)
	return nil
}
