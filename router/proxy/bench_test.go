package proxy

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// discardWriter is a reusable ResponseWriter, so that the handler
// benchmark counts the proxy's allocations, not a recorder's.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

func benchBackend(b *testing.B) config.Backend {
	b.Helper()
	body := []byte("hello, world\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
		w.Write(body)
	}))
	b.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	return config.Backend{Address: host, Port: p, Weight: 1}
}

// benchRouter returns the request path over a router with one route,
// "bench" on bench.test.
func benchRouter(b *testing.B, withBreaker bool, std ...bool) *Handler {
	r := router.New(router.Options{Logger: zerolog.Nop()})
	b.Cleanup(r.Close)
	p := New(r, Options{Logger: zerolog.Nop(), StandardTransport: len(std) > 0 && std[0]})
	b.Cleanup(p.Close)
	e := ep("bench", benchBackend(b))
	if withBreaker {
		cb := config.DefaultCircuitBreaker()
		cb.Params = breaker.DefaultParams()
		e.CircuitBreaker = &cb
	}
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{e}})
	return p
}

// BenchmarkServeHTTP calls the handler directly (a real round trip to a
// loopback backend, no client connection): the proxy's own cost.
func BenchmarkServeHTTP(b *testing.B) {
	for _, c := range []struct {
		name       string
		cb, stdlib bool
	}{{"no-breaker", false, false}, {"breaker", true, false}, {"stdlib-transport", false, true}} {
		b.Run(c.name, func(b *testing.B) {
			r := benchRouter(b, c.cb, c.stdlib)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, "http://bench.test/path?q=1", nil)
				req.RemoteAddr = "192.0.2.1:1234"
				clear(w.h)
				r.ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkProxyEndToEnd sends requests over keep-alive connections
// through a real listener: client → Levee → backend, served by Levee's
// own HTTP/1.1 server (router/httpx/server) or net/http's, with Levee's lean
// backend client or net/http's Transport, with and without a breaker.
func BenchmarkProxyEndToEnd(b *testing.B) {
	for _, c := range []struct {
		name                     string
		cb, stdlib, stdlibServer bool
	}{
		{"no-breaker", false, false, false},
		{"breaker", true, false, false},
		{"stdlib-transport", false, true, false},
		{"stdlib-server", false, false, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := benchRouter(b, c.cb, c.stdlib)
			front := newFrontOf(b, r, c.stdlibServer)
			b.Cleanup(front.Close)
			client := front.Client()
			client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
			req, _ := http.NewRequest(http.MethodGet, front.URL+"/path", nil)
			req.Host = "bench.test"
			b.ReportAllocs()
			b.SetParallelism(16) // enough concurrent clients to keep both cores busy
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}

// BenchmarkBreakerInRequestPath measures what the breaker adds per
// request: Admit + Report on the route's breaker, as ServeHTTP does them.
func BenchmarkBreakerInRequestPath(b *testing.B) {
	r := benchRouter(b, true)
	rt, _ := r.src.Snapshot().Route("bench")
	g := rt.State().Guard()
	b.ReportAllocs()
	for b.Loop() {
		d := g.Breaker().Admit()
		d.Token.Report(breaker.Outcome{Result: classify(rt, 200)})
	}
}

// BenchmarkReverseProxyBaseline is the same end-to-end path through
// net/http/httputil.ReverseProxy, for comparison.
func BenchmarkReverseProxyBaseline(b *testing.B) {
	be := benchBackend(b)
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort(be.Address, strconv.Itoa(be.Port))}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256, DisableCompression: true}
	front := httptest.NewServer(rp)
	b.Cleanup(front.Close)
	client := front.Client()
	client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	req, _ := http.NewRequest(http.MethodGet, front.URL+"/path", nil)
	req.Host = "bench.test"
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
}
