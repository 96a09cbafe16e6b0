package dockerhosts

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/rs/zerolog"
)

// perEngine is how many labelled containers each engine runs (C).
const perEngine = 50

// waitLimit bounds every wait for an update.
const waitLimit = 20 * time.Second

// arrival is one update as the consumer received it.
type arrival struct {
	at time.Time
	su config.SourceUpdate
}

// consumer is the provider's sink: it timestamps each update and hands it
// over.
type consumer chan arrival

func (c consumer) Update(su config.SourceUpdate) { c <- arrival{at: time.Now(), su: su} }

// until returns the first update that satisfies ok.
func (c consumer) until(tb testing.TB, what string, ok func(config.SourceUpdate) bool) arrival {
	tb.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		select {
		case a := <-c:
			if ok(a.su) {
				return a
			}
		case <-deadline.C:
			tb.Fatalf("no update with %s within %v", what, waitLimit)
		}
	}
}

// backends counts the update's backends.
func backends(su config.SourceUpdate) int {
	n := 0
	for _, ep := range su.Entrypoints {
		n += len(ep.Backends)
	}
	return n
}

// routed reports whether a backend named name on host, dialled at its
// published port, is in the update.
func routed(su config.SourceUpdate, host, name string, port int) bool {
	for _, ep := range su.Entrypoints {
		if slices.ContainsFunc(ep.Backends, func(b config.Backend) bool {
			return b.Name == name && b.Host == host && b.Port == port
		}) {
			return true
		}
	}
	return false
}

// fleet is n simulated engines watched by one provider of several hosts.
type fleet struct {
	engines []*engine
	sink    consumer
	stop    func()
}

// hostPort is the published port of container i of engine e.
func hostPort(e, i int) int { return 20000 + e*1000 + i }

// newEngines makes n engines with perC labelled containers each.
func newEngines(n, perC int) []*engine {
	es := make([]*engine, n)
	for e := range es {
		es[e] = newEngine(fmt.Sprintf("edge%d", e+1))
		for i := range perC {
			name := fmt.Sprintf("svc-%d-%d", e+1, i)
			es[e].add(labelled(fmt.Sprintf("%064x", e*100000+i+1), name, hostPort(e, i)))
		}
	}
	return es
}

// runner is a provider's Run and Close.
type runner interface {
	Run(context.Context, docker.Sink) error
	Close() error
}

// watch starts docker.NewHosts over es (single: docker.New, the provider
// of one engine, over es[0]) and waits for the first update that holds
// every container of every engine.
func watch(tb testing.TB, es []*engine, perC int, single bool) *fleet {
	tb.Helper()
	opts := docker.Options{
		Parser:   labels.Parser{Prefix: "levee"},
		Debounce: time.Microsecond,
		Logger:   zerolog.Nop(),
		Hostname: "levee-bench-not-a-container",
		SelfID:   "levee-bench-not-a-container",
	}
	var prov runner
	var err error
	if single {
		opts.Host = es[0].url()
		prov, err = docker.New(opts)
	} else {
		specs := make([]docker.HostSpec, len(es))
		for i, e := range es {
			specs[i] = docker.HostSpec{Name: e.name, URL: e.url()}
		}
		prov, err = docker.NewHosts(opts, specs)
	}
	if err != nil {
		tb.Fatalf("docker provider over %d engines: %v", len(es), err)
	}
	sink := make(consumer, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		prov.Run(ctx, sink)
	}()
	f := &fleet{engines: es, sink: sink, stop: func() {
		cancel()
		<-done
		prov.Close()
	}}
	want := len(es) * perC
	sink.until(tb, fmt.Sprintf("%d backends", want), func(su config.SourceUpdate) bool { return backends(su) == want })
	// Every stream is open once every host has synced (each subscribes
	// before it lists), but check: an event sent before would be lost.
	for _, e := range es {
		if e.subscribers() != 1 {
			tb.Fatalf("engine %s has %d event streams, want 1", e.name, e.subscribers())
		}
	}
	return f
}

func (f *fleet) close() {
	f.stop()
	for _, e := range f.engines {
		e.close()
	}
}

// TestFakeEngines checks that the provider of several hosts syncs the
// simulated engines and follows a start and a die on one of them.
func TestFakeEngines(t *testing.T) {
	f := watch(t, newEngines(2, 3), 3, false)
	defer f.close()
	last := f.engines[1]
	c := labelled(fmt.Sprintf("%064x", 999), "late", 29999)
	last.start(c)
	f.sink.until(t, "late on edge2", func(su config.SourceUpdate) bool { return routed(su, "edge2", "late", 29999) })
	last.die(c.ID)
	f.sink.until(t, "late gone", func(su config.SourceUpdate) bool {
		return !routed(su, "edge2", "late", 29999) && backends(su) == 6
	})
}

// cpuTime is the process's user + system CPU time.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// percentile returns the p-th percentile (nearest rank) of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	rank := int(float64(len(ds))*p/100+0.999999) - 1
	return ds[max(0, min(rank, len(ds)-1))]
}

// BenchmarkEvent: see the package doc. single is the provider of one
// engine (docker.New, one --docker-host without a name): its containers
// are dialled at their own address, not a published port; single-400 is
// it with as many containers as eight engines have together.
func BenchmarkEvent(b *testing.B) {
	b.Run("single", func(b *testing.B) { benchEvents(b, 1, perEngine, true) })
	b.Run(fmt.Sprintf("single-%d", 8*perEngine), func(b *testing.B) { benchEvents(b, 1, 8*perEngine, true) })
	for _, n := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("engines=%d", n), func(b *testing.B) { benchEvents(b, n, perEngine, false) })
	}
}

// benchEvents measures n engines of perC containers each; see the package
// doc.
func benchEvents(b *testing.B, n, perC int, single bool) {
	es := newEngines(n, perC)
	base := liveHeap()
	f := watch(b, es, perC, single)
	defer f.close()
	perEngineHeap := float64(int64(liveHeap())-int64(base)) / float64(n)
	last := es[n-1]
	host, port := last.name, 30000
	if single {
		host, port = "", 8080
	}
	lats := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for i := range b.N {
		name := fmt.Sprintf("new-%d", i)
		c := labelled(fmt.Sprintf("%064x", 1<<40+i), name, 30000)
		sent := time.Now()
		last.start(c)
		a := f.sink.until(b, name+" routed", func(su config.SourceUpdate) bool { return routed(su, host, name, port) })
		lats = append(lats, a.at.Sub(sent))
		b.StopTimer()
		last.die(c.ID)
		f.sink.until(b, name+" gone", func(su config.SourceUpdate) bool { return !routed(su, host, name, port) })
		b.StartTimer()
	}
	b.StopTimer()
	// The removals ran with the timer stopped but the CPU clock
	// running: the CPU time is of b.N starts and b.N dies.
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(2*b.N), "cpu-ns/event")
	slices.Sort(lats)
	b.ReportMetric(float64(percentile(lats, 50).Microseconds()), "p50-µs")
	b.ReportMetric(float64(percentile(lats, 99).Microseconds()), "p99-µs")
	b.ReportMetric(perEngineHeap, "heap-B/engine")
}
