// Command harness runs Levee's router in-process behind an http.Server set
// up like `levee serve`'s proxy listener, so that it can be profiled under
// wrk load: after a warm-up it records a CPU profile and an allocation
// profile for a fixed window, prints the requests served and the heap
// allocations per request in that window, and exits.
//
// `levee serve` has no pprof endpoint (an edge proxy should not expose one by
// default); this harness is the same router and the same server settings,
// without the API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/httpx/server"
	"github.com/levee-proxy/levee/router/proxy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "harness: %v\n", err)
		os.Exit(1)
	}
}

// counter counts the requests the router serves; one atomic add per
// request. done is closed after the limit-th request (limit > 0).
type counter struct {
	next  http.Handler
	n     atomic.Int64
	limit int64
	done  chan struct{}
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := c.n.Add(1)
	c.next.ServeHTTP(w, r)
	if n == c.limit {
		close(c.done)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:18090", "proxy listen address")
	backend := flag.String("backend", "127.0.0.1:18080", "backend host:port")
	withBreaker := flag.Bool("breaker", false, "give the route a circuit breaker")
	serverKind := flag.String("server", "edge", "HTTP/1.1 server: edge (Levee's, as levee serve uses by default) or stdlib (net/http)")
	clientKind := flag.String("client", "levee", "HTTP/1.1 client to the backend: levee (Levee's, the default of levee serve) or stdlib (net/http's Transport, --backend-client=stdlib)")
	warmup := flag.Duration("warmup", 2*time.Second, "load time before profiling starts")
	window := flag.Duration("duration", 10*time.Second, "profiling window")
	plainIO := flag.Bool("plain-socket-io", false, "net.Conn's Read/Write instead of raw system calls, in the edge server and the backend client (server.Server.PlainSocketIO, proxy.Options.PlainSocketIO)")
	requests := flag.Int64("requests", 0, "end the window after this many requests in all, warm-up included (0: no limit)")
	cpuOut := flag.String("cpuprofile", "cpu.pprof", "CPU profile output (empty: no CPU profile)")
	memOut := flag.String("memprofile", "allocs.pprof", "allocation profile output (empty: none)")
	flag.Parse()

	host, portStr, err := net.SplitHostPort(*backend)
	if err != nil {
		return fmt.Errorf("-backend %q: %w", *backend, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return fmt.Errorf("-backend %q: port: %w", *backend, err)
	}
	cfg := `{"hostnames":["bench.local"]}`
	if *withBreaker {
		cfg = `{"hostnames":["bench.local"],"circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":10}}`
	}
	payload := fmt.Sprintf(`{"name":"bench","backends":[{"address":%q,"port":%d}],"config":%s}`, host, port, cfg)
	src := diagnostics.Source{Provider: config.SourceAPI, ObjectID: "bench", ObjectName: "bench"}
	ep, _, err := config.DecodeEntrypoint(config.FormatJSON, []byte(payload), src)
	if err != nil {
		return fmt.Errorf("decoding the bench entrypoint %s: %w", payload, err)
	}
	ep.ID, ep.Source = "bench", config.SourceAPI

	// The same collaborators as `levee serve`: a Prometheus registry (the
	// metrics are part of the request cost) and a logger at warn.
	log := zerolog.New(os.Stderr).Level(zerolog.WarnLevel)
	reg := prometheus.NewRegistry()
	rt := router.New(router.Options{Logger: log, Registerer: reg})
	defer rt.Close()
	if *clientKind != "levee" && *clientKind != "stdlib" {
		return fmt.Errorf("-client %q: want levee or stdlib", *clientKind)
	}
	handler := proxy.New(rt, proxy.Options{Logger: log, Registerer: reg, PlainSocketIO: *plainIO, StandardTransport: *clientKind == "stdlib"})
	defer handler.Close()
	rt.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep}})

	count := &counter{next: handler, limit: *requests, done: make(chan struct{})}
	var srv interface {
		Serve(net.Listener) error
		Shutdown(context.Context) error
	}
	switch *serverKind {
	case "edge":
		srv = &server.Server{
			PlainSocketIO:     *plainIO,
			Handler:           count,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    1 << 20,
		}
	case "stdlib":
		srv = &http.Server{
			Handler:           count,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       120 * time.Second,
			MaxHeaderBytes:    1 << 20,
		}
	default:
		return fmt.Errorf("-server %q: want edge or stdlib", *serverKind)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", *listen, err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "harness: serving on %s, GOMAXPROCS=%d\n", ln.Addr(), runtime.GOMAXPROCS(0))

	select {
	case <-time.After(*warmup):
	case err := <-errc:
		return fmt.Errorf("serving: %w", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	n0 := count.n.Load()
	start := time.Now()
	if *cpuOut != "" {
		cpuFile, err := os.Create(*cpuOut)
		if err != nil {
			return fmt.Errorf("creating %s: %w", *cpuOut, err)
		}
		defer cpuFile.Close()
		if err := pprof.StartCPUProfile(cpuFile); err != nil {
			return fmt.Errorf("starting the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	select {
	case <-time.After(*window):
	case <-count.done:
	}
	pprof.StopCPUProfile()
	elapsed := time.Since(start)
	n := count.n.Load() - n0
	runtime.ReadMemStats(&after)

	if *memOut != "" {
		memFile, err := os.Create(*memOut)
		if err != nil {
			return fmt.Errorf("creating %s: %w", *memOut, err)
		}
		defer memFile.Close()
		if err := pprof.Lookup("allocs").WriteTo(memFile, 0); err != nil {
			return fmt.Errorf("writing %s: %w", *memOut, err)
		}
	}
	if n == 0 {
		return errors.New("no request was served during the profiling window")
	}
	fmt.Printf("requests %d in %.1fs (%.0f req/s)\n", n, elapsed.Seconds(), float64(n)/elapsed.Seconds())
	fmt.Printf("heap allocations per request: %.1f objects, %.0f bytes (whole process, server + router + transport)\n",
		float64(after.Mallocs-before.Mallocs)/float64(n), float64(after.TotalAlloc-before.TotalAlloc)/float64(n))
	fmt.Printf("GC cycles in the window: %d\n", after.NumGC-before.NumGC)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}
