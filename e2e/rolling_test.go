package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// Rolling restarts. Everything this file creates is named
// levee-i20-<run id>-… and labelled for dockertest's cleanup.

// i20Fixture is an echo image with a fast HEALTHCHECK, a bridge network
// and Levee watching the engine.
type i20Fixture struct {
	cli     *client.Client
	run     string
	image   string
	network string
	p       *leveeProc
}

func newI20Fixture(t *testing.T) *i20Fixture {
	cli := dockertest.Require(t)
	run := dockertest.RunID(t)
	f := &i20Fixture{cli: cli, run: run}
	f.image = dockertest.BuildImageTagged(t, cli, "./cmd/echo",
		"EXPOSE 8080\n"+dockertest.EchoDockerfileHealthcheck, "levee-i20-echo:"+run)
	f.network = "levee-i20-" + run
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.NetworkCreate(ctx, f.network, client.NetworkCreateOptions{Driver: "bridge",
		Labels: map[string]string{dockertest.Label: run}}); err != nil {
		t.Fatalf("create network %s: %v", f.network, err)
	}
	f.p = startLevee(t, "--log-level", "info", "--route-grace", "1m")
	return f
}

// replica starts echo replica n of host.
func (f *i20Fixture) replica(t *testing.T, host string, n int) (id, name string) {
	name = fmt.Sprintf("levee-i20-%s-app-%d", f.run, n)
	spec := echoSpec(f.image, f.network, name, host, nil)
	spec.Name = name
	// The replica keeps serving for a moment after its stop signal, as
	// operations.md asks of a backend that wants no request lost: a
	// request Levee sent before it saw the stop is answered, not reset
	// in the listener's backlog.
	spec.Env = append(spec.Env, "ECHO_DRAIN=500ms")
	return dockertest.Run(t, f.cli, spec), name
}

// restart is `docker restart` (10 s grace), then waits until the
// container reports healthy again.
func (f *i20Fixture) restart(t *testing.T, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	grace := 10
	if _, err := f.cli.ContainerRestart(ctx, id, client.ContainerRestartOptions{Timeout: &grace}); err != nil {
		t.Fatalf("restart %s: %v", id, err)
	}
	dockertest.Eventually(t, 30*time.Second, func() error {
		h, err := dockertest.Health(ctx, f.cli, id)
		if err != nil || h != "healthy" {
			return fmt.Errorf("health %q (%v)", h, err)
		}
		return nil
	})
}

// load is concurrent clients, each on its own keep-alive connection,
// sending GETs to host until stopped, tallying every answer.
type load struct {
	mu       sync.Mutex
	statuses map[string]int // "200", "503 no-healthy-backend", "error: …"
	lastSeen map[string]time.Time
	slowest  time.Duration
	total    atomic.Int64
	stop     chan struct{}
	wg       sync.WaitGroup
}

func startLoad(url, host string, conns int) *load {
	l := &load{statuses: map[string]int{}, lastSeen: map[string]time.Time{}, stop: make(chan struct{})}
	for range conns {
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1}}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer c.CloseIdleConnections()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				l.one(c, url, host)
			}
		}()
	}
	return l
}

func (l *load) one(c *http.Client, url, host string) {
	req, _ := http.NewRequest(http.MethodGet, url+"/", nil)
	req.Host = host
	t0 := time.Now()
	resp, err := c.Do(req)
	d := time.Since(t0)
	key, name := "", ""
	if err != nil {
		key = "error: " + err.Error()
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		key = fmt.Sprint(resp.StatusCode)
		if resp.StatusCode != http.StatusOK {
			key += " " + resp.Header.Get("X-Levee-Diagnostic") + " Retry-After=" + resp.Header.Get("Retry-After")
		} else {
			var reply struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(body, &reply)
			name = reply.Name
		}
	}
	l.total.Add(1)
	l.mu.Lock()
	l.statuses[key]++
	if name != "" {
		l.lastSeen[name] = time.Now()
	}
	l.slowest = max(l.slowest, d)
	l.mu.Unlock()
}

// servedSince reports whether replica name answered after t.
func (l *load) servedSince(name string, t time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastSeen[name].After(t)
}

func (l *load) finish() (map[string]int, time.Duration) {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.statuses, l.slowest
}

// Three replicas restarted one at a time (docker restart, each waiting for
// health and for Levee to route to it again) under 64 concurrent
// keep-alive clients: not a single answer other than 200. The stopping
// replica leaves rotation at its kill event; a request that meets it
// between its listener closing and that event is refused and goes to
// another replica.
func TestRollingRestartLosesNoRequest(t *testing.T) {
	f := newI20Fixture(t)
	host := "levee-i20-" + f.run + ".test"
	ids := map[string]string{}
	for n := 1; n <= 3; n++ {
		id, name := f.replica(t, host, n)
		ids[name] = id
	}
	seen := map[string]bool{}
	dockertest.Eventually(t, 60*time.Second, func() error {
		name, err := routedBy(f.p, host)
		if err != nil {
			return err
		}
		seen[name] = true
		if len(seen) < 3 {
			return fmt.Errorf("replicas routed so far: %v", seen)
		}
		return nil
	})

	l := startLoad(f.p.proxyURL(), host, 64)
	defer func() {
		select {
		case <-l.stop:
		default:
			l.finish()
		}
	}()
	for n := 1; n <= 3; n++ {
		name := fmt.Sprintf("levee-i20-%s-app-%d", f.run, n)
		t0 := time.Now()
		f.restart(t, ids[name])
		dockertest.Eventually(t, 60*time.Second, func() error {
			if !l.servedSince(name, t0) {
				return fmt.Errorf("%s not routed to since its restart", name)
			}
			return nil
		})
		t.Logf("%s restarted and back in rotation after %v", name, time.Since(t0).Round(time.Millisecond))
	}
	statuses, slowest := l.finish()
	total := l.total.Load()
	t.Logf("%d requests, answers %v, slowest %v", total, statuses, slowest)
	if total < 1000 {
		t.Fatalf("only %d requests under load: the load did not run", total)
	}
	// Zero non-2xx answers. (A 502 backend-unreachable seen once in
	// 6,750 requests on a loaded CI host came from a reset that beat the
	// request's write on a new connection to a replica closing its
	// listener: not then taken for a close before the answer, so not
	// retried. router/httpx/client TestFailureClassification pins the
	// fix.) On a failure, the access log of each non-2xx answer says
	// which backend and which error.
	var bad []string
	for k, v := range statuses {
		if k != "200" {
			bad = append(bad, fmt.Sprintf("%d × %s", v, k))
		}
	}
	if len(bad) > 0 {
		for _, m := range f.p.logs() {
			if m["event"] == "access" && fmt.Sprint(m["status"]) != "200" {
				t.Logf("access: %v", m)
			}
		}
		t.Fatalf("%d requests, not all 200: %s", total, strings.Join(bad, "; "))
	}
}

// A single replica restarting: during its gap clients get 503
// no-healthy-backend with a Retry-After, at once, never a 502 and never
// after waiting for a dial timeout.
func TestSingleReplicaRestartAnswers503WithRetryAfter(t *testing.T) {
	f := newI20Fixture(t)
	host := "levee-i20-" + f.run + "-one.test"
	id, name := f.replica(t, host, 1)
	dockertest.Eventually(t, 60*time.Second, func() error {
		_, err := routedBy(f.p, host)
		return err
	})
	l := startLoad(f.p.proxyURL(), host, 4)
	t0 := time.Now()
	f.restart(t, id)
	dockertest.Eventually(t, 60*time.Second, func() error {
		if !l.servedSince(name, t0) {
			return fmt.Errorf("%s not routed to since its restart", name)
		}
		return nil
	})
	statuses, slowest := l.finish()
	t.Logf("answers %v, slowest %v", statuses, slowest)
	for k, v := range statuses {
		if k != "200" && k != "503 no-healthy-backend Retry-After=1" {
			t.Errorf("%d × %q: want only 200 and 503 no-healthy-backend with Retry-After", v, k)
		}
	}
	if statuses["503 no-healthy-backend Retry-After=1"] == 0 {
		t.Errorf("no 503 during the gap: answers %v", statuses)
	}
	// The bound is the issue's: before, clients waited out the old 5 s
	// dial timeout and got a 502. A request that dials the replica just
	// as its network goes (before the engine's kill event arrives) may
	// still wait one dial timeout (1 s) and then gets its answer; under a
	// loaded CI host that alone can pass 1 s, so the bound is not tighter.
	if slowest >= 5*time.Second {
		t.Errorf("slowest answer took %v: a client waited as long as the old 5 s dial timeout", slowest)
	}
}
