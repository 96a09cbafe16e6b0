package proxy

import (
	"crypto/tls"
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/httpx/client"
)

// transports pools backend connections. Routes share one transport per
// distinct backend timeout and backend TLS configuration: the timeout is
// a property of the transport (a read deadline for the lean client,
// ResponseHeaderTimeout for net/http's), so bounding the wait for headers
// costs no per-request timer or context; the TLS configuration is the
// route's, compiled once when the route is built (router.Route.BackendTLS),
// so an HTTPS route's connections are never pooled with another route's
// that verifies differently. Routes with scheme h2c or h2 have HTTP/2
// transports of their own (client.NewH2).
type transports struct {
	mu   sync.Mutex
	opts Options
	m    map[transportKey]backendTransport
	std  map[transportKey]*http.Transport
	// byKey is a copy of m that requests read without the lock; it is
	// replaced (never changed) when a transport is added.
	byKey atomic.Pointer[map[transportKey]backendTransport]
}

// transportKey picks a transport: the backend timeout, the route's
// backend TLS configuration (nil: no TLS) and whether it speaks HTTP/2
// (scheme h2c or h2).
type transportKey struct {
	timeout time.Duration
	tls     *tls.Config
	h2      bool
}

// backendTransport is what an attempt needs from a backend client: a
// round trip that hands interim (1xx) answers to an informer.
type backendTransport interface {
	RoundTripInformational(req *http.Request, inf client.Informer) (*http.Response, error)
	CloseIdleConnections()
}

func (t *transports) init(o Options) {
	t.opts = o
	t.m = make(map[transportKey]backendTransport)
	t.std = make(map[transportKey]*http.Transport)
	t.byKey.Store(&map[transportKey]backendTransport{})
}

// get returns the backend transport for a header timeout (0 = none), a
// backend TLS configuration (nil = no TLS) and HTTP/2 or HTTP/1.1.
func (t *transports) get(timeout time.Duration, cfg *tls.Config, h2 bool) backendTransport {
	k := transportKey{timeout, cfg, h2}
	if tr := (*t.byKey.Load())[k]; tr != nil {
		return tr
	}
	return t.add(k)
}

// add creates the transport for a key the first time it is asked for.
func (t *transports) add(k transportKey) backendTransport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr := t.m[k]; tr != nil {
		return tr
	}
	var tr backendTransport
	switch o := t.opts; {
	case k.h2:
		// HTTP/2 is net/http's, whichever HTTP/1.1 client is chosen.
		tr = client.NewH2(client.H2Options{
			TLS: k.tls, DialTimeout: o.DialTimeout, HeaderTimeout: k.timeout, BodyTimeout: o.BackendBodyTimeout,
			IdleConnTimeout: o.IdleConnTimeout, MaxHeaderBytes: client.MaxResponseHeaderBytes,
		})
	case o.StandardTransport:
		tr = client.NewStandard(t.standardLocked(k), t.opts.BackendBodyTimeout)
	default:
		tr = client.New(client.Options{
			DialTimeout: o.DialTimeout, HeaderTimeout: k.timeout, BodyTimeout: o.BackendBodyTimeout,
			IdleConnTimeout: o.IdleConnTimeout, MaxIdleConnsPerHost: o.MaxIdleConnsPerHost, PlainSocketIO: o.PlainSocketIO,
			TLS: k.tls,
		})
	}
	t.m[k] = tr
	t.byKey.Store(new(maps.Clone(t.m)))
	return tr
}

func (t *transports) standardLocked(k transportKey) *http.Transport {
	if tr := t.std[k]; tr != nil {
		return tr
	}
	timeout := k.timeout
	d := &net.Dialer{Timeout: t.opts.DialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                  nil, // never route backend traffic through HTTP_PROXY
		DialContext:            d.DialContext,
		MaxIdleConns:           0, // bounded per host instead
		MaxIdleConnsPerHost:    t.opts.MaxIdleConnsPerHost,
		IdleConnTimeout:        t.opts.IdleConnTimeout,
		ResponseHeaderTimeout:  timeout,
		MaxResponseHeaderBytes: client.MaxResponseHeaderBytes, // as Levee's own client
		ExpectContinueTimeout:  time.Second,
		// The client's Accept-Encoding passes through; the proxy must not
		// add its own and decompress behind the client's back.
		DisableCompression: true,
		WriteBufferSize:    32 << 10,
		ReadBufferSize:     32 << 10,
		// HTTPS backends (NewStandard handshakes with it, bounded by
		// the dial timeout as Levee's own client).
		TLSClientConfig:     k.tls,
		TLSHandshakeTimeout: t.opts.DialTimeout,
	}
	t.std[k] = tr
	return tr
}

// close stops the lean transports' reapers and closes idle connections.
func (t *transports) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, tr := range t.m {
		if h, ok := tr.(*client.Transport); ok {
			h.Shutdown()
		}
		tr.CloseIdleConnections()
	}
	for _, tr := range t.std {
		tr.CloseIdleConnections()
	}
}
