package scale

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/proxy"
)

// TestHeap10k explains the RSS of 10,000 routes: the live heap after the
// routes are loaded, and after one request to every route (what creates
// each route's request series and state), with heap profiles of both
// (LEVEE_BENCH_HEAP_DIR, default a temp dir) to read with
// `go tool pprof -sample_index=inuse_space -top`.
func TestHeap10k(t *testing.T) {
	if os.Getenv("LEVEE_BENCH_HEAP") != "1" {
		t.Skip("set LEVEE_BENCH_HEAP=1 to profile the heap of 10,000 routes")
	}
	dir := os.Getenv("LEVEE_BENCH_HEAP_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	}))
	defer backend.Close()

	live := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	profile := func(name string) {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		runtime.GC()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			t.Fatal(err)
		}
	}

	base := live()
	eps := apiEntrypoints(t, routeCount, backend.Listener.Addr().String())
	afterDecode := live()
	reg := prometheus.NewRegistry()
	r := router.New(router.Options{Logger: zerolog.Nop(), Registerer: reg})
	defer r.Close()
	p := proxy.New(r, proxy.Options{Logger: zerolog.Nop(), Registerer: reg})
	defer p.Close()
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
	loaded := live()
	profile("heap-loaded.pprof")

	w := &discardWriter{h: http.Header{}}
	for i := range routeCount {
		req := httptest.NewRequest(http.MethodGet, "http://"+apiHost(i)+"/", nil)
		clear(w.h)
		p.ServeHTTP(w, req)
	}
	served := live()
	profile("heap-served.pprof")
	runtime.KeepAlive(eps)

	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	t.Logf("live heap: entrypoints decoded %.1f MiB; routes loaded %.1f MiB (%.0f B per route); after one request per route %.1f MiB (+%.0f B per route); profiles in %s",
		mib(afterDecode-base), mib(loaded-base), float64(loaded-afterDecode)/routeCount,
		mib(served-base), float64(served-loaded)/routeCount, dir)
}
