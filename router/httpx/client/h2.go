package client

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// ReasonNoH2 is the Reason of a *TLSError when the handshake succeeded
// but the backend did not select h2 in ALPN (RFC 7301 3.2): it speaks
// TLS, not HTTP/2 over it.
const ReasonNoH2 = "h2 not selected in ALPN"

// Limits of an HTTP/2 backend connection, on top of the dial, handshake
// and response header timeouts that every backend client has.
const (
	// H2PingAfter: a connection that received no frame for this long is
	// sent a PING (RFC 9113 6.7) ...
	H2PingAfter = 30 * time.Second
	// H2PingTimeout: ... and closed, failing its streams, when no PING
	// ACK comes back within this.
	H2PingTimeout = 15 * time.Second
	// H2WriteTimeout closes a connection that has frames to send but
	// could write nothing for this long (a backend that stopped reading).
	H2WriteTimeout = 30 * time.Second
)

// H2Options configure an HTTP/2 backend client.
type H2Options struct {
	// TLS nil: cleartext HTTP/2 with prior knowledge (h2c, RFC 9113
	// 3.3), for http:// URLs. Else HTTP/2 over TLS for https:// URLs:
	// ALPN offers h2 only, and a backend that does not select it fails
	// the connection with a *TLSError of Reason ReasonNoH2.
	TLS *tls.Config
	// DialTimeout bounds connecting, and the TLS handshake as for
	// HTTPS (else DefaultHandshakeTimeout).
	DialTimeout time.Duration
	// HeaderTimeout bounds the wait for a response head from the end
	// of the request head (net/http's ResponseHeaderTimeout).
	HeaderTimeout time.Duration
	// BodyTimeout bounds the wait for the next bytes of a response body.
	BodyTimeout time.Duration
	// IdleConnTimeout closes connections that carry no stream this long.
	IdleConnTimeout time.Duration
	// MaxHeaderBytes bounds a response's header block.
	MaxHeaderBytes int64
}

// NewH2 returns an HTTP/2 backend client: net/http's Transport with its
// HTTP/2 only (no HTTP/1.1 fallback), under Standard's contract. Streams
// to a backend are multiplexed on as few connections as its
// SETTINGS_MAX_CONCURRENT_STREAMS allows; a connection whose peer goes
// silent is found by PING (H2PingAfter, H2PingTimeout). A GOAWAY or a
// stream reset fails the streams it names with an error, which the proxy
// judges as any transport failure; a stream the backend refused before
// processing it (REFUSED_STREAM, or beyond a GOAWAY's last stream) is
// sent again by the Transport, as RFC 9113 8.7 allows, once: a request
// that the backend takes on no stream (H2MaxStreams, H2MaxDials) ends
// with a *StreamRefusedError (h2refused.go).
func NewH2(o H2Options) *Standard {
	var p http.Protocols
	if o.TLS == nil {
		p.SetUnencryptedHTTP2(true)
	} else {
		p.SetHTTP2(true)
	}
	d := &net.Dialer{Timeout: o.DialTimeout, KeepAlive: 30 * time.Second}
	dial := budgetDials(d.DialContext)
	tr := &http.Transport{
		Proxy:                  nil, // never route backend traffic through HTTP_PROXY
		DialContext:            dial,
		Protocols:              &p,
		IdleConnTimeout:        o.IdleConnTimeout,
		ResponseHeaderTimeout:  o.HeaderTimeout,
		MaxResponseHeaderBytes: o.MaxHeaderBytes,
		DisableCompression:     true, // the client's Accept-Encoding passes through
		HTTP2: &http.HTTP2Config{
			SendPingTimeout:  H2PingAfter,
			PingTimeout:      H2PingTimeout,
			WriteByteTimeout: H2WriteTimeout,
		},
	}
	if o.TLS != nil {
		cfg := o.TLS.Clone() // shares the session cache
		cfg.NextProtos = []string{"h2"}
		tr.TLSClientConfig = cfg
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			tc, err := handshake(ctx, conn, cfg, addr, o.DialTimeout)
			if err != nil {
				return nil, err
			}
			if st := tc.ConnectionState(); st.NegotiatedProtocol != "h2" {
				_ = tc.Close()
				return nil, &TLSError{Addr: addr, ServerName: serverName(cfg, addr), Reason: ReasonNoH2, Err: errNoH2(st.NegotiatedProtocol)}
			}
			return tc, nil
		}
	}
	return &Standard{Transport: tr, BodyTimeout: o.BodyTimeout, h2: true}
}

// errNoH2 says what the backend selected instead of h2.
func errNoH2(selected string) error {
	if selected == "" {
		return errors.New("the backend selected no application protocol")
	}
	return errors.New("the backend selected " + selected)
}
