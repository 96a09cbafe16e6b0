package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker/fleet/redistest"
)

// stallBreaker holds a probe's lease far longer than the test runs, so
// that the only way a second probe reaches the backend is a replica
// granting itself a slot the store did not lease.
const stallBreaker = `{"threshold":0.5,"min_requests":30,"window":"10s","cooldown":"1s","max_cooldown":"1s","half_open_probes":1,"probe_timeout":"60s"}`

// TestFleetStallsKeepOneProbe: the fleet is half-open with its one probe
// held by the backend; Redis stalls for 150 ms three times (DEBUG SLEEP,
// several flush timeouts each). A stall that short is a late store, not a
// lost one: every replica keeps following the fleet, so no replica grants
// itself a probe slot and the backend sees exactly the one probe.
func TestFleetStallsKeepOneProbe(t *testing.T) {
	srv := redistest.Start(t)
	be := newFleetBackend(t)
	ps := startFleet(t, 3, srv.URL(), be.URL, stallBreaker)
	be.mode.Store(1)
	for range 12 {
		for _, p := range ps {
			if _, err := hit(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, p := range ps {
		waitFleet(t, p, fmt.Sprintf("replica %d open", i), func(b map[string]any) bool { return b["state"] == "open" })
	}
	be.mode.Store(2) // the probe hangs until the test ends
	before := be.hits.Load()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for _, p := range ps {
		for range 2 { // two clients a replica: one may be held by the probe
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					hitCtx(ctx, p)
				}
			}()
		}
	}
	select {
	case <-be.held:
	case <-time.After(15 * time.Second):
		t.Fatal("no probe reached the backend")
	}
	for range 3 {
		srv.Stall(150 * time.Millisecond)
		waitFlushes(t, ps, 5) // the replicas flushed (and saw the store answer) after the stall
	}
	for i, p := range ps {
		b, err := breakerOf(p)
		if err != nil {
			t.Fatal(err)
		}
		if b["store"] != "fleet" || b["state"] != "half-open" {
			t.Errorf("replica %d after the stalls: store %v state %v, want fleet half-open", i, b["store"], b["state"])
		}
		if n := countLogs(p, "breaker_store_fallback", nil); n != 0 {
			t.Errorf("replica %d fell back to local judgement %d times on 150 ms stalls", i, n)
		}
	}
	if probes := be.hits.Load() - before; probes != 1 {
		t.Fatalf("%d probes reached the backend during one half-open period with half_open_probes=1", probes)
	}
}

// hitCtx sends one request through a replica, abandoned when ctx ends.
func hitCtx(ctx context.Context, p *leveeProc) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.proxyURL()+"/", nil)
	req.Host = fleetHost
	resp, err := fleetClient.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

var flushCountRe = regexp.MustCompile(`(?m)^levee_breaker_store_flush_seconds_count (\d+)$`)

// flushCount returns how many flush rounds a replica has made.
func flushCount(t *testing.T, p *leveeProc) int {
	t.Helper()
	m := flushCountRe.FindStringSubmatch(apiText(t, p, "/metrics"))
	if m == nil {
		t.Fatal("no levee_breaker_store_flush_seconds_count in /metrics")
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// waitFlushes polls until every replica has made n more flush rounds
// (10s).
func waitFlushes(t *testing.T, ps []*leveeProc, n int) {
	t.Helper()
	start := make([]int, len(ps))
	for i, p := range ps {
		start[i] = flushCount(t, p)
	}
	deadline := time.Now().Add(10 * time.Second)
	for i, p := range ps {
		for flushCount(t, p) < start[i]+n {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d made fewer than %d flushes in 10s", i, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
