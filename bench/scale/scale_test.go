package scale

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/proxy"
)

// discardWriter is a reusable ResponseWriter, so ServeHTTP benchmarks count
// the router's allocations and not a recorder's.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

func newRouter(b *testing.B) *router.Router {
	r := router.New(router.Options{Logger: zerolog.Nop()})
	b.Cleanup(r.Close)
	return r
}

// BenchmarkUpdate10k is one API source update of 10,000 entrypoints: merge,
// build the snapshot, re-attach runtime state, swap. "initial" loads an empty
// router (start-up with a full state file); "rebuild" replaces an identical
// set (what every API change costs: the API source hands over its whole set).
func BenchmarkUpdate10k(b *testing.B) {
	eps := apiEntrypoints(b, routeCount, "127.0.0.1:9")
	b.Run("initial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			r := router.New(router.Options{Logger: zerolog.Nop()})
			b.StartTimer()
			r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
			b.StopTimer()
			r.Close()
			b.StartTimer()
		}
	})
	b.Run("rebuild", func(b *testing.B) {
		r := newRouter(b)
		r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
		b.ReportAllocs()
		for b.Loop() {
			r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
		}
	})
}

// BenchmarkNewSnapshot10k is the table build alone, without the router's
// merge and state registry.
func BenchmarkNewSnapshot10k(b *testing.B) {
	eps := apiEntrypoints(b, routeCount, "127.0.0.1:9")
	b.ReportAllocs()
	for b.Loop() {
		router.NewSnapshot(eps)
	}
}

// BenchmarkMatch10k matches requests against a table of 10,000 routes,
// cycling through every host so the caches see a realistic spread: a hit on
// an exact host with a "/" route, a hit on a host whose route has a path
// prefix, and a miss (unknown host).
func BenchmarkMatch10k(b *testing.B) {
	r := newRouter(b)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: apiEntrypoints(b, routeCount, "127.0.0.1:9")})
	snap := r.Snapshot()
	hosts := make([]string, routeCount)
	for i := range hosts {
		hosts[i] = apiHost(i)
	}
	b.Run("hit", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if snap.Match("GET", hosts[i], "/users/42/orders") == nil && i%10 != 7 {
				b.Fatalf("no route for %s", hosts[i])
			}
			i++
			if i == routeCount {
				i = 0
			}
		}
	})
	b.Run("hit-path-prefix", func(b *testing.B) {
		b.ReportAllocs()
		i := 7
		for b.Loop() {
			if snap.Match("GET", hosts[i], "/api/v1/items") == nil {
				b.Fatalf("no route for %s/api", hosts[i])
			}
			i += 10
			if i >= routeCount {
				i = 7
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if snap.Match("GET", "nowhere.bench.local", "/") != nil {
				b.Fatal("unknown host matched")
			}
		}
	})
}

// BenchmarkServeHTTP10k is a whole request through proxy.Handler on a
// table of 10,000 routes without backends: match, then Levee's own 503
// no-healthy-backend answer. No network: the router's per-request cost at
// scale.
func BenchmarkServeHTTP10k(b *testing.B) {
	eps := apiEntrypoints(b, routeCount, "127.0.0.1:9")
	for i := range eps {
		eps[i].Backends = nil
	}
	r := newRouter(b)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: eps})
	p := proxy.New(r, proxy.Options{Logger: zerolog.Nop()})
	b.Cleanup(p.Close)
	reqs := make([]*http.Request, 64)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "http://"+apiHost(i*151)+"/users/42", nil)
	}
	w := &discardWriter{h: http.Header{}}
	// Check once that the answer is the 503 we mean to measure.
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, reqs[0])
	if rec.Code != http.StatusServiceUnavailable {
		b.Fatalf("route without backends answered %d (%s), want 503", rec.Code, rec.Header().Get(proxy.HeaderDiagnostic))
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		clear(w.h)
		p.ServeHTTP(w, reqs[i&63])
		i++
	}
}

// BenchmarkContainers1k is the Docker provider's rebuild after an event on a
// host with 1,000 labelled containers: parse every container's labels, then
// hand the result to the router (which already holds the previous set).
func BenchmarkContainers1k(b *testing.B) {
	cs := containers(containerCount)
	p := labels.Parser{Prefix: "levee"}
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p.Parse(cs)
		}
	})
	b.Run("parse+update", func(b *testing.B) {
		r := newRouter(b)
		eps, ds := p.Parse(cs)
		r.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: eps, Diagnostics: ds})
		b.ReportAllocs()
		for b.Loop() {
			eps, ds := p.Parse(cs)
			r.Update(config.SourceUpdate{Source: config.SourceDocker, Entrypoints: eps, Diagnostics: ds})
		}
	})
}
