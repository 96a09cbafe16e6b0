package fleetbench

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/breaker/fleet"
	"github.com/levee-proxy/levee/breaker/fleet/redistest"
)

func newStore(tb testing.TB, url string, interval time.Duration) *fleet.Store {
	tb.Helper()
	c, err := fleet.NewClient(url)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := fleet.New(fleet.Options{Client: c, FlushInterval: interval, Timeout: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// follow waits until the breaker follows the fleet.
func follow(tb testing.TB, b *breaker.Breaker) {
	deadline := time.Now().Add(10 * time.Second)
	for !b.Following() {
		if time.Now().After(deadline) {
			tb.Fatal("breaker never joined the fleet")
		}
		time.Sleep(time.Millisecond)
	}
}

var never = breaker.Params{Threshold: 1, MinRequests: breaker.MaxMinRequests, Window: 10 * time.Second}

func BenchmarkRequestPath(b *testing.B) {
	ok := breaker.Outcome{Result: breaker.Success}
	serial := func(b *testing.B, br *breaker.Breaker) {
		b.ReportAllocs()
		for b.Loop() {
			br.Admit().Token.Report(ok)
		}
	}
	parallel := func(b *testing.B, br *breaker.Breaker) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				br.Admit().Token.Report(ok)
			}
		})
	}
	for _, mode := range []struct {
		name string
		run  func(*testing.B, *breaker.Breaker)
	}{{"serial", serial}, {"parallel", parallel}} {
		b.Run("local/"+mode.name, func(b *testing.B) {
			mode.run(b, breaker.NewWithParams("local", never, breaker.Options{}))
		})
		b.Run("fleet/"+mode.name, func(b *testing.B) {
			srv := redistest.Start(b)
			s := newStore(b, srv.URL(), fleet.DefaultFlushInterval)
			br := breaker.NewWithParams("fleet", never, breaker.Options{})
			s.Join("fleet", br, nil)
			follow(b, br)
			mode.run(b, br)
		})
	}
}

// replica is one of three processes' worth of store and breaker.
type replica struct {
	s      *fleet.Store
	b      *breaker.Breaker
	opened chan time.Time
}

func BenchmarkTripPropagation(b *testing.B) {
	srv := redistest.Start(b)
	p := breaker.Params{Threshold: 0.5, MinRequests: 30, Window: 10 * time.Second, Cooldown: time.Hour}
	var rs []*replica
	for range 3 {
		r := &replica{s: newStore(b, srv.URL(), fleet.DefaultFlushInterval), opened: make(chan time.Time, 4)}
		r.b = breaker.NewWithParams("prop", p, breaker.Options{})
		r.b.OnTransition(func(t breaker.Transition) {
			if t.To == breaker.Open {
				r.opened <- time.Now()
			}
		})
		r.s.Join("prop", r.b, func(action, _ string) {
			if action == "close" {
				r.b.ForceClose()
			}
		})
		follow(b, r.b)
		rs = append(rs, r)
	}
	var spread, fromReport []time.Duration
	for b.Loop() {
		if err := rs[0].s.Control(context.Background(), "prop", "close", "bench"); err != nil {
			b.Fatal(err)
		}
		for _, r := range rs {
			for r.b.State() != breaker.Closed {
				time.Sleep(100 * time.Microsecond)
			}
		}
		last := time.Now()
		for range 40 {
			rs[0].b.Admit().Token.Report(breaker.Outcome{Result: breaker.Failure})
		}
		var at [3]time.Time
		for i, r := range rs {
			select {
			case at[i] = <-r.opened:
			case <-time.After(5 * time.Second):
				b.Fatalf("replica %d never opened", i)
			}
		}
		first := slices.MinFunc(at[:], func(x, y time.Time) int { return x.Compare(y) })
		lastOpen := slices.MaxFunc(at[:], func(x, y time.Time) int { return x.Compare(y) })
		spread = append(spread, lastOpen.Sub(first))
		fromReport = append(fromReport, lastOpen.Sub(last))
	}
	b.ReportMetric(pct(spread, 50), "p50-propagation-µs")
	b.ReportMetric(pct(spread, 99), "p99-propagation-µs")
	b.ReportMetric(pct(fromReport, 50), "p50-report-to-fleet-open-µs")
	b.ReportMetric(pct(fromReport, 99), "p99-report-to-fleet-open-µs")
}

func pct(ds []time.Duration, p int) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	i = min(max(i-1, 0), len(s)-1)
	return float64(s[i].Microseconds())
}

const (
	cmpReplicas   = 3
	cmpGoroutines = 8 // per replica
)

// BenchmarkVersusGobreaker sends b.N requests per goroutine (24
// goroutines over three replicas) through each breaker.
func BenchmarkVersusGobreaker(b *testing.B) {
	b.Run("levee-fleet", func(b *testing.B) {
		srv := redistest.Start(b)
		var brs []*breaker.Breaker
		var stores []*fleet.Store
		for range cmpReplicas {
			s := newStore(b, srv.URL(), fleet.DefaultFlushInterval)
			br := breaker.NewWithParams("cmp", never, breaker.Options{})
			s.Join("cmp", br, nil)
			follow(b, br)
			brs, stores = append(brs, br), append(stores, s)
		}
		n := b.N
		elapsed := hammer(cmpReplicas*cmpGoroutines, n, func(g int) {
			brs[g%cmpReplicas].Admit().Token.Report(breaker.Outcome{Result: breaker.Success})
		})
		sent := cmpReplicas * cmpGoroutines * n
		c, _ := fleet.NewClient(srv.URL())
		defer c.Close()
		var counted int
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			counted, _ = c.HGet(context.Background(), stores[0].CountsKey("cmp"), "success").Int()
			if counted >= sent {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		report(b, sent, counted, elapsed)
	})
	b.Run("gobreaker-distributed", func(b *testing.B) {
		srv := redistest.Start(b)
		var cbs []*gobreaker.DistributedCircuitBreaker[struct{}]
		for range cmpReplicas {
			c, _ := fleet.NewClient(srv.URL())
			b.Cleanup(func() { _ = c.Close() })
			cb, err := gobreaker.NewDistributedCircuitBreaker[struct{}](&redisStore{c: c, token: strconv.Itoa(len(cbs))},
				gobreaker.Settings{Name: "cmp", ReadyToTrip: func(gobreaker.Counts) bool { return false }})
			if err != nil {
				b.Fatal(err)
			}
			cbs = append(cbs, cb)
		}
		n := b.N
		var errs atomic.Int64
		elapsed := hammer(cmpReplicas*cmpGoroutines, n, func(g int) {
			if _, err := cbs[g%cmpReplicas].Execute(func() (struct{}, error) { return struct{}{}, nil }); err != nil {
				errs.Add(1)
			}
		})
		sent := cmpReplicas * cmpGoroutines * n
		c, _ := fleet.NewClient(srv.URL())
		defer c.Close()
		data, err := c.Get(context.Background(), "gobreaker:state:cmp").Bytes()
		if err != nil {
			b.Fatal(err)
		}
		var st gobreaker.SharedState
		if err := json.Unmarshal(data, &st); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(errs.Load()), "errors")
		report(b, sent, int(st.Counts.TotalSuccesses), elapsed)
	})
}

func report(b *testing.B, sent, counted int, elapsed time.Duration) {
	b.ReportMetric(float64(sent)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(sent-counted), "lost")
	b.ReportMetric(100*float64(sent-counted)/float64(sent), "lost-%")
}

// hammer runs fn n times on each of g goroutines and returns the wall time.
func hammer(g, n int, fn func(g int)) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for i := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range n {
				fn(i)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// redisStore is gobreaker's SharedDataStore on go-redis: a SET NX PX lock
// (released only by its holder) and plain GET/SET of the state, as
// gobreaker's own example does with redsync.
type redisStore struct {
	c     redis.UniversalClient
	token string
}

var errLocked = errors.New("locked")

func (s *redisStore) Lock(name string) error {
	ok, err := s.c.SetNX(context.Background(), name, s.token, 5*time.Second).Result()
	if err != nil {
		return err
	}
	if !ok {
		return errLocked
	}
	return nil
}

var unlockScript = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

func (s *redisStore) Unlock(name string) error {
	return unlockScript.Run(context.Background(), s.c, []string{name}, s.token).Err()
}

func (s *redisStore) GetData(name string) ([]byte, error) {
	b, err := s.c.Get(context.Background(), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}

func (s *redisStore) SetData(name string, data []byte) error {
	return s.c.Set(context.Background(), name, data, 0).Err()
}
