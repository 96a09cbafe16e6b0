package e2e

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// loadResult is one request of the load on the shared route.
type loadResult struct {
	sent    time.Time
	latency time.Duration
	name    string
	err     error
}

// loadPhase sums the requests sent in one phase of the load.
type loadPhase struct {
	sent, failed int
	// lastFailure is when the last failed request was sent, after from.
	lastFailure time.Duration
	maxLatency  time.Duration
	names       map[string]int
}

func summarise(rs []loadResult, from, to time.Time) loadPhase {
	ph := loadPhase{names: map[string]int{}}
	for _, r := range rs {
		if r.sent.Before(from) || !r.sent.Before(to) {
			continue
		}
		ph.sent++
		ph.maxLatency = max(ph.maxLatency, r.latency)
		if r.err != nil {
			ph.failed++
			ph.lastFailure = max(ph.lastFailure, r.sent.Sub(from))
			continue
		}
		ph.names[r.name]++
	}
	return ph
}

func (ph loadPhase) String() string {
	return fmt.Sprintf("%d sent, %d failed (last sent %v in), max latency %v, answered by %v",
		ph.sent, ph.failed, ph.lastFailure.Round(time.Millisecond), ph.maxLatency.Round(time.Millisecond), ph.names)
}

// One route with replicas on two real engines, the second host of weight
// 3: its replica takes three requests in four. Then the route is under
// continuous load while the second engine stops. Requests sent before the
// stop all succeed; between the stop and the host judged lost (W086) a
// request may fail only if it was in flight on the stopping replica
// (refused connects go to blue, retry.attempts=2 retries the rest), and
// this window is one ping interval and two call timeouts at most; every
// request sent once the host is taken out succeeds, on blue.
func TestDockerHostsSharedRouteUnderLoadWhileAHostStops(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	edge2 := dockertest.SecondEngine(t)
	image2 := dockertest.EchoImage(t, edge2.Client)
	run := dockertest.RunID(t)
	shared := "app-" + run + ".test"
	retry := map[string]string{"levee.http.app.retry.attempts": "2"}

	dockertest.Run(t, cli, echoSpec(image, network, "blue", shared, retry))
	dockertest.Run(t, edge2.Client, dockertest.Spec{Image: image2, Env: []string{"ECHO_NAME=green"}, Publish: []int{dockertest.EchoPort},
		Labels: map[string]string{"levee.enable": "true", "levee.http.app.host": shared, "levee.http.app.retry.attempts": "2"}})

	const ping, callTimeout = time.Second, 2 * time.Second
	p := startLevee(t, "--docker-host", "local="+cli.DaemonHost(), "--docker-host", "edge2="+edge2.TCP, "--docker-host-weight", "edge2=3",
		"--docker-ping-interval", ping.String(), "--docker-call-timeout", callTimeout.String(), "--docker-backoff-max", "1s", "--route-grace", "1m")
	dockertest.Eventually(t, 30*time.Second, func() error {
		body, err := hostsAPI(p, "/entrypoints")
		if err != nil {
			return err
		}
		if strings.Count(body, `"host":"edge2"`) != 1 || strings.Count(body, `"host":"local"`) != 1 {
			return fmt.Errorf("want one backend on each host: %s", body)
		}
		return nil
	})

	// The split: smooth weighted round robin, weights 100 and 300.
	split := map[string]int{}
	for range 400 {
		name, err := routedWithin(p, shared, 5*time.Second)
		if err != nil {
			t.Fatalf("before the stop: %v", err)
		}
		split[name]++
	}
	t.Logf("split over 400 requests with --docker-host-weight edge2=3: %v", split)
	if split["green"] < 280 || split["green"] > 320 || split["blue"]+split["green"] != 400 {
		t.Errorf("split %v, want about 300 green (edge2, weight 3) and 100 blue", split)
	}

	var (
		mu      sync.Mutex
		results []loadResult
		wg      sync.WaitGroup
	)
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now()
				name, err := routedWithin(p, shared, 5*time.Second)
				mu.Lock()
				results = append(results, loadResult{sent: sent, latency: time.Since(sent), name: name, err: err})
				mu.Unlock()
			}
		})
	}
	loadStart := time.Now()
	dockertest.Eventually(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(results) < 200 {
			return fmt.Errorf("%d requests so far", len(results))
		}
		return nil
	})
	stopAt := time.Now()
	edge2.Stop(t)
	stopped := time.Now()
	var lostAt time.Time
	dockertest.Eventually(t, 30*time.Second, func() error {
		diags, err := hostsAPI(p, "/diagnostics")
		if err != nil {
			return err
		}
		if !strings.Contains(diags, "W086") {
			return fmt.Errorf("no W086 for edge2 yet")
		}
		lostAt = time.Now()
		return nil
	})
	after := lostAt.Add(3 * time.Second)
	dockertest.Eventually(t, 10*time.Second, func() error {
		if time.Now().Before(after) {
			return fmt.Errorf("load goes on until %v", after)
		}
		return nil
	})
	close(stop)
	wg.Wait()

	before, during, out := summarise(results, loadStart, stopAt), summarise(results, stopAt, lostAt), summarise(results, lostAt, time.Now())
	t.Logf("engine stop took %v; host judged lost %v after the stop began", stopped.Sub(stopAt).Round(time.Millisecond), lostAt.Sub(stopAt).Round(time.Millisecond))
	t.Logf("before the stop:            %v", before)
	t.Logf("stop -> judged lost:        %v", during)
	t.Logf("after it was taken out:     %v", out)
	if before.failed != 0 {
		t.Errorf("before the stop: %v", before)
	}
	if out.failed != 0 || out.sent == 0 || out.names["green"] != 0 {
		t.Errorf("after edge2 was taken out: %v; want every request answered by blue", out)
	}
	if bound := stopped.Sub(stopAt) + ping + 2*callTimeout + 2*time.Second; lostAt.Sub(stopAt) > bound {
		t.Errorf("edge2 judged lost %v after the stop, want within %v (the stop, a ping interval, two call timeouts)", lostAt.Sub(stopAt), bound)
	}
	if during.failed*10 > during.sent {
		t.Errorf("between the stop and W086 more than 10%% of the requests failed: %v", during)
	}
	var failures []string
	for _, r := range results {
		if r.err != nil {
			failures = append(failures, fmt.Sprintf("%v after the stop: %v", r.sent.Sub(stopAt).Round(time.Millisecond), r.err))
		}
	}
	slices.Sort(failures)
	for _, f := range failures {
		t.Logf("failed: %s", f)
	}
}
