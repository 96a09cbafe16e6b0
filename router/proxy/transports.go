package proxy

import (
	"maps"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/levee-proxy/levee/router/httpx/client"
)

// transports pools backend connections. Routes share one transport per
// distinct backend timeout: the timeout is a property of the transport (a
// read deadline for the lean client, ResponseHeaderTimeout for
// net/http's), so bounding the wait for headers costs no per-request timer
// or context.
type transports struct {
	mu   sync.Mutex
	opts Options
	m    map[time.Duration]backendTransport
	std  map[time.Duration]*http.Transport
	// byTimeout is a copy of m that requests read without the lock; it is
	// replaced (never changed) when a transport is added.
	byTimeout atomic.Pointer[map[time.Duration]backendTransport]
}

// backendTransport is what an attempt needs from a backend client: a
// round trip that hands interim (1xx) answers to an informer.
type backendTransport interface {
	RoundTripInformational(req *http.Request, inf client.Informer) (*http.Response, error)
	CloseIdleConnections()
}

func (t *transports) init(o Options) {
	t.opts = o
	t.m = make(map[time.Duration]backendTransport)
	t.std = make(map[time.Duration]*http.Transport)
	t.byTimeout.Store(&map[time.Duration]backendTransport{})
}

// get returns the backend transport for a header timeout (0 = none).
func (t *transports) get(timeout time.Duration) backendTransport {
	if tr := (*t.byTimeout.Load())[timeout]; tr != nil {
		return tr
	}
	return t.add(timeout)
}

// add creates the transport for a timeout the first time it is asked for.
func (t *transports) add(timeout time.Duration) backendTransport {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr := t.m[timeout]; tr != nil {
		return tr
	}
	var tr backendTransport
	if t.opts.StandardTransport {
		tr = client.NewStandard(t.standardLocked(timeout), t.opts.BackendBodyTimeout)
	} else {
		o := t.opts
		tr = client.New(client.Options{
			DialTimeout: o.DialTimeout, HeaderTimeout: timeout, BodyTimeout: o.BackendBodyTimeout,
			IdleConnTimeout: o.IdleConnTimeout, MaxIdleConnsPerHost: o.MaxIdleConnsPerHost, PlainSocketIO: o.PlainSocketIO,
		})
	}
	t.m[timeout] = tr
	t.byTimeout.Store(new(maps.Clone(t.m)))
	return tr
}

func (t *transports) standardLocked(timeout time.Duration) *http.Transport {
	if tr := t.std[timeout]; tr != nil {
		return tr
	}
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
	}
	t.std[timeout] = tr
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
