package e2e

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker/fleet/redistest"
)

// Fleet rate limits through the binary: three levee processes sharing one
// redis-server admit one rateLimit.scope=fleet limit together, and each
// enforces it alone once Redis is gone (docs/policies.md#fleet-rate-limits).

const (
	fleetRate  = 20  // requests a second, the fleet's
	fleetBurst = 10  // the fleet bucket's size
	rateFlush  = 100 // ms, --rate-limit-flush-interval
)

// loadFleet sends requests through every replica, one at a time each, for
// d, and returns the requests each had admitted (200) and the total sent.
func loadFleet(t *testing.T, ps []*leveeProc, d time.Duration) (admitted []int64, sent int64) {
	t.Helper()
	counts := make([]atomic.Int64, len(ps))
	var total, errs atomic.Int64
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				total.Add(1)
				st, err := hit(p)
				switch {
				case err != nil:
					errs.Add(1)
				case st == 200:
					counts[i].Add(1)
				case st != 429:
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if errs.Load() != 0 {
		t.Fatalf("%d of %d requests failed (neither 200 nor 429)", errs.Load(), total.Load())
	}
	for i := range counts {
		admitted = append(admitted, counts[i].Load())
	}
	return admitted, total.Load()
}

func sum64(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// TestFleetRateLimit: three replicas admit the fleet's rate (not three
// times it) within the documented bound; Redis killed, each replica
// enforces the whole limit locally (fails to local, not open) with W059,
// which goes when Redis is back.
func TestFleetRateLimit(t *testing.T) {
	srv := redistest.Start(t)
	be := newFleetBackend(t)
	port := portOf(t, be.URL)
	var ps []*leveeProc
	for range 3 {
		p := startLevee(t, "--docker=false", "--log-level", "info", "--access-log=false",
			"--breaker-store", srv.URL(), "--rate-limit-flush-interval", fmt.Sprintf("%dms", rateFlush))
		createEntrypoint(t, p, `{"name":"app","backends":[{"address":"127.0.0.1","port":`+port+`}],
			"config":{"hostnames":["`+fleetHost+`"],"rate_limit":{"average":`+fmt.Sprint(fleetRate)+`,"period":"1s","burst":`+fmt.Sprint(fleetBurst)+`,"scope":"fleet"}}}`)
		ps = append(ps, p)
	}

	const secs = 3
	admitted, sent := loadFleet(t, ps, secs*time.Second)
	total := sum64(admitted)
	// The bound of the docs: the limit over the time, the burst, and per
	// replica its whole bucket before its first reconciliation and one
	// flush interval's share of the rate... with a second flush interval
	// of slack for the end of the window.
	upper := int64(fleetRate*secs + fleetBurst + 3*(fleetBurst+2*fleetRate*rateFlush/1000))
	lower := int64(fleetRate * secs * 7 / 10)
	t.Logf("shared: admitted %v = %d of %d sent in %ds (fleet limit %d/s, burst %d; bound %d-%d)", admitted, total, sent, secs, fleetRate, fleetBurst, lower, upper)
	if sent < 10*upper {
		t.Fatalf("only %d requests sent: the test did not load the limit", sent)
	}
	if total > upper || total < lower {
		t.Fatalf("the fleet admitted %d in %ds, want %d-%d (three local limits would admit about %d)", total, secs, lower, upper, 3*(fleetRate*secs+fleetBurst))
	}
	if got := be.hits.Load(); got != total {
		t.Fatalf("backend saw %d requests, the replicas admitted %d", got, total)
	}

	srv.Stop()
	for i, p := range ps {
		deadline := time.Now().Add(10 * time.Second)
		for {
			// A request makes the replica reconcile (an idle one PINGs
			// only once it is local).
			if _, err := hit(p); err != nil {
				t.Fatal(err)
			}
			body := apiText(t, p, "/diagnostics")
			if strings.Contains(body, `"W059"`) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: no W059 in /diagnostics after Redis stopped: %s", i, body)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if body := apiText(t, p, "/metrics"); !strings.Contains(body, "levee_ratelimit_store_local 1") {
			t.Fatalf("replica %d: /metrics does not show the local fallback", i)
		}
	}
	admitted, _ = loadFleet(t, ps, secs*time.Second)
	t.Logf("Redis down: admitted %v", admitted)
	for i, n := range admitted {
		// Each replica alone: about the whole limit (more than its third
		// of it), never open.
		if n < fleetRate*secs*7/10 || n > fleetRate*secs+2*fleetBurst {
			t.Fatalf("replica %d admitted %d in %ds with Redis down, want about %d (the whole limit, locally)", i, n, secs, fleetRate*secs)
		}
	}

	// Redis back: the next reconciliation shares the limit again and W059
	// goes.
	srv.Restart()
	for i, p := range ps {
		deadline := time.Now().Add(10 * time.Second)
		for strings.Contains(apiText(t, p, "/diagnostics"), `"W059"`) {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: W059 still reported 10s after Redis came back", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
