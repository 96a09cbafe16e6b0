package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker/fleet/redistest"
)

// Fleet in-flight limits through the binary: three levee processes
// sharing one redis-server admit at most inFlight.amount of a source in
// flight together, each enforces it alone once Redis is gone, and they
// share it again once Redis is back (docs/policies.md#fleet-in-flight-limits).

const fleetAmount = 4

// heldBackend holds GET /hold until release is closed (or the client
// goes) and answers anything else at once.
func heldBackend(t *testing.T) (srv *httptest.Server, held chan struct{}, release chan struct{}) {
	held, release = make(chan struct{}, 16), make(chan struct{})
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			held <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv, held, release
}

// getPath sends GET path through a replica and returns its status.
func getPath(ctx context.Context, p *leveeProc, path string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.proxyURL()+path, nil)
	req.Host = fleetHost
	resp, err := fleetClient.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// pollStatus sends GET / through p until it answers want (every 20ms,
// for at most 10s).
func pollStatus(t *testing.T, p *leveeProc, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	last := 0
	for time.Now().Before(deadline) {
		st, err := getPath(context.Background(), p, "/")
		if err != nil {
			t.Fatal(err)
		}
		if st == want {
			return
		}
		last = st
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: still %d after 10s, want %d", what, last, want)
}

// TestFleetInFlight: amount requests held on one replica make the others
// refuse that source (three local limits would each admit amount);
// Redis killed, each replica admits alone with W059; Redis back, the
// limit is shared again and W059 goes; the held requests ended, every
// replica admits again.
func TestFleetInFlight(t *testing.T) {
	srv := redistest.Start(t)
	be, held, release := heldBackend(t)
	port := portOf(t, be.URL)
	var ps []*leveeProc
	for range 3 {
		p := startLevee(t, "--docker=false", "--log-level", "info", "--access-log=false",
			"--breaker-store", srv.URL(), "--rate-limit-flush-interval", "100ms")
		createEntrypoint(t, p, `{"name":"app","backends":[{"address":"127.0.0.1","port":`+port+`}],
			"config":{"hostnames":["`+fleetHost+`"],"in_flight":{"amount":`+fmt.Sprint(fleetAmount)+`,"scope":"fleet"}}}`)
		ps = append(ps, p)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	for range fleetAmount {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = getPath(ctx, ps[0], "/hold")
		}()
	}
	for range fleetAmount {
		select {
		case <-held:
		case <-time.After(10 * time.Second):
			t.Fatal("the held requests did not reach the backend")
		}
	}
	if st, _ := getPath(context.Background(), ps[0], "/"); st != http.StatusTooManyRequests {
		t.Fatalf("replica 0 over its own amount: %d", st)
	}
	// The others learn of replica 0's requests at their next
	// reconciliation of the key (a first request lists it).
	for i, p := range ps[1:] {
		pollStatus(t, p, http.StatusTooManyRequests, fmt.Sprintf("replica %d with the amount in flight on replica 0", i+1))
	}

	srv.Stop()
	for i, p := range ps[1:] {
		pollStatus(t, p, http.StatusOK, fmt.Sprintf("replica %d with Redis down (local)", i+1))
		if body := apiText(t, p, "/diagnostics"); !strings.Contains(body, `"W059"`) || !strings.Contains(body, "in-flight-store") {
			t.Fatalf("replica %d: no W059 of the in-flight store with Redis down: %s", i+1, body)
		}
		if body := apiText(t, p, "/metrics"); !strings.Contains(body, "levee_inflight_store_local 1") {
			t.Fatalf("replica %d: /metrics does not show the local fallback", i+1)
		}
	}

	srv.Restart()
	for i, p := range ps[1:] {
		pollStatus(t, p, http.StatusTooManyRequests, fmt.Sprintf("replica %d with Redis back", i+1))
		if body := apiText(t, p, "/diagnostics"); strings.Contains(body, "in-flight-store") {
			t.Fatalf("replica %d: W059 still reported with the limit shared again: %s", i+1, body)
		}
	}

	close(release)
	wg.Wait()
	for i, p := range ps {
		pollStatus(t, p, http.StatusOK, fmt.Sprintf("replica %d after the held requests ended", i))
	}
}
