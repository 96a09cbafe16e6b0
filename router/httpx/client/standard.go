package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"time"
)

// Standard is net/http's Transport (--backend-client=stdlib) under the
// contract of Levee's own client: interim answers reach the Informer, a
// response body that goes quiet for bodyTimeout is cut off, and a pooled
// connection is used only once the Transport has looked at what it holds
// (standard_conn.go). The backend timeout is the Transport's
// ResponseHeaderTimeout, which runs from the last byte of the request, as
// Levee's own client's does.
type Standard struct {
	*http.Transport
	// BodyTimeout bounds the wait for the next bytes of a response body.
	BodyTimeout time.Duration
	// h2: the Transport speaks HTTP/2 (NewH2): each round trip is held
	// to H2MaxStreams and H2MaxDials (h2refused.go).
	h2 bool
}

// NewStandard puts tr under Standard's contract; it wraps tr.DialContext
// (net.Dialer's when nil), so that Standard sees its connections. With
// tr.TLSClientConfig, https:// requests handshake as Levee's own client
// does (its ServerName defaulting to the backend's host, bounded by
// tr.TLSHandshakeTimeout, a failure being a *TLSError).
func NewStandard(tr *http.Transport, bodyTimeout time.Duration) *Standard {
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = watchDials(dial)
	if cfg, timeout := tr.TLSClientConfig, tr.TLSHandshakeTimeout; cfg != nil {
		tr.DialTLSContext = watchDials(func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return handshake(ctx, conn, cfg, addr, timeout)
		})
	}
	return &Standard{Transport: tr, BodyTimeout: bodyTimeout}
}

// RoundTripInformational is Transport.RoundTripInformational on net/http's
// Transport.
func (t *Standard) RoundTripInformational(req *http.Request, inf Informer) (*http.Response, error) {
	var ctx context.Context
	var cancel context.CancelFunc
	var budget *h2Budget
	if t.h2 {
		budget = &h2Budget{addr: req.URL.Host}
		ctx, budget.cancel = context.WithCancelCause(req.Context())
		ctx, cancel = context.WithValue(ctx, h2BudgetKey{}, budget), budget.stop
	} else {
		ctx, cancel = context.WithCancel(req.Context())
	}
	trace := &httptrace.ClientTrace{
		// Called before the Transport counts the request as expected on
		// the connection: a pooled one is used only once its read loop
		// has settled (standard_conn.go). On HTTP/2, before each stream.
		GotConn: func(info httptrace.GotConnInfo) {
			if budget != nil {
				budget.gotConn()
			}
			if wc, ok := info.Conn.(*watchedConn); ok && info.Reused {
				wc.settled(ctx)
			}
		},
	}
	if inf != nil {
		trace.Got1xxResponse = func(code int, h textproto.MIMEHeader) error {
			if code != http.StatusSwitchingProtocols {
				inf.Informational(code, http.Header(h))
			}
			return nil
		}
	}
	ctx = httptrace.WithClientTrace(ctx, trace)
	resp, err := t.Transport.RoundTrip(req.WithContext(ctx))
	if err == nil && budget != nil && budget.ended(ctx) {
		// Answered on the stream whose start was cancelled: its body
		// would break at the first read.
		_ = resp.Body.Close()
		resp, err = nil, ctx.Err()
	}
	if err != nil {
		if budget != nil {
			err = budget.finish(req.Context(), ctx, err)
		}
		cancel()
		return nil, alertAsTLSError(t.TLSClientConfig, req.URL.Host, err)
	}
	if rwc, ok := resp.Body.(io.ReadWriteCloser); ok && resp.StatusCode == http.StatusSwitchingProtocols {
		// A tunnel: the proxy bounds its idle time itself.
		resp.Body = &cancelRWC{ReadWriteCloser: rwc, cancel: cancel}
		return resp, nil
	}
	b := &idleBody{body: resp.Body, timeout: t.BodyTimeout, cancel: cancel}
	if t.BodyTimeout > 0 {
		b.timer = time.AfterFunc(t.BodyTimeout, cancel)
	}
	resp.Body = b
	return resp, nil
}

// idleBody cancels its request (which makes the Transport close the
// connection) when no read returns for timeout.
type idleBody struct {
	body    io.ReadCloser
	timeout time.Duration
	timer   *time.Timer
	cancel  context.CancelFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.timer != nil {
		b.timer.Reset(b.timeout)
	}
	return b.body.Read(p)
}

func (b *idleBody) Close() error {
	if b.timer != nil {
		b.timer.Stop()
	}
	err := b.body.Close()
	b.cancel()
	return err
}

type cancelRWC struct {
	io.ReadWriteCloser
	cancel context.CancelFunc
}

func (c *cancelRWC) Close() error {
	err := c.ReadWriteCloser.Close()
	c.cancel()
	return err
}
