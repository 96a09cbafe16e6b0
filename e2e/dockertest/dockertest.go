// Package dockertest lets tests run against the real Docker Engine.
//
// The model: every test gets a run ID (RunID). Everything a test creates
// through this package — images, containers, networks — carries the label
// levee.test=<run id>, and Require registers a cleanup that removes every
// object with that label when the test ends, pass or fail. A crashed run
// leaves objects labelled levee.test; the next test process sweeps them
// before its first test (sweep.go), and
// `docker rm -f $(docker ps -aq -f label=levee.test)` clears them by hand.
//
// There is no image registry: BuildImage compiles a Go package into a static
// binary (CGO_ENABLED=0, once per test process) and builds a FROM scratch
// image from an in-memory tar context.
//
// Require skips the test when no engine is reachable, unless the
// environment has CI=true, where a missing engine is a failure. Under
// go test -short it always skips.
package dockertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// Label is the label key every test object carries; its value is the run ID.
const Label = "levee.test"

// cleanupTimeout bounds the end-of-test removal; it runs after the test's
// own context is cancelled.
const cleanupTimeout = 2 * time.Minute

var (
	testSeq atomic.Int64
	// runIDs maps a testing.TB to its run ID so repeated calls agree.
	runIDs sync.Map
	// cleaned records the tests whose cleanup is registered.
	cleaned sync.Map
)

// RunID returns the run ID of test t: unique per test and per process, and
// stable across calls within one test. Objects labelled levee.test=<RunID(t)>
// are removed when t ends.
func RunID(t testing.TB) string {
	if v, ok := runIDs.Load(t); ok {
		return v.(string)
	}
	id := fmt.Sprintf("%s-%d", processID, testSeq.Add(1))
	v, loaded := runIDs.LoadOrStore(t, id)
	if !loaded {
		t.Cleanup(func() { runIDs.Delete(t) })
	}
	return v.(string)
}

// Constraint is the `levee serve --docker-constraints` expression that
// keeps a Levee to the objects of run runID (labelled levee.test=<runID>),
// so that a test sees only its own containers and services, whatever else
// runs on the engine (another test's, a `make demo` left up).
func Constraint(runID string) string {
	return fmt.Sprintf("Label(%q,%q)", Label, runID)
}

// Require returns a client for the engine named by the environment
// (DOCKER_HOST, else the local socket), with API version negotiation. When
// no engine answers it skips t with a message naming the address, or fails
// t when CI=true. It also registers Cleanup for t.
func Require(t testing.TB) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test needs a Docker Engine")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		unavailable(t, "", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		_ = cli.Close()
		unavailable(t, cli.DaemonHost(), err)
		return nil
	}
	t.Cleanup(func() { _ = cli.Close() })
	sweepLeftovers(cli, t.Logf)
	Cleanup(t, cli)
	return cli
}

func unavailable(t testing.TB, host string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("docker: no engine reachable at %q: %v (CI=true: Docker tests must run)", host, err)
	}
	t.Skipf("docker: no engine reachable at %q: %v (skipping; with CI=true this fails)", host, err)
}

// Cleanup registers, once per test, the removal of every container, network
// and image labelled levee.test=<RunID(t)> when t ends, even on failure.
// Require calls it; call it yourself only with a client you made.
func Cleanup(t testing.TB, cli *client.Client) {
	id := RunID(t)
	if _, loaded := cleaned.LoadOrStore(t, true); loaded {
		return
	}
	t.Cleanup(func() {
		defer cleaned.Delete(t)
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if err := removeLabelled(ctx, cli, id); err != nil {
			t.Errorf("dockertest cleanup of run %s: %v", id, err)
		}
	})
}

// removeLabelled removes containers first (they pin networks and images).
func removeLabelled(ctx context.Context, cli *client.Client, runID string) error {
	f := make(client.Filters).Add("label", Label+"="+runID)
	var errs []error
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list containers: %w", err))
	}
	for _, c := range cs.Items {
		_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s: %w", c.ID, err))
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list networks: %w", err))
	}
	for _, n := range ns.Items {
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
		}
	}
	is, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		errs = append(errs, fmt.Errorf("list images: %w", err))
	}
	for _, im := range is.Items {
		_, err := cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove image %s: %w", im.ID, err))
		}
	}
	return errors.Join(errs...)
}

// Eventually calls f until it returns nil, failing t with f's last error
// when timeout passes first. Use generous timeouts: the machine is shared.
func Eventually(t testing.TB, timeout time.Duration, f func() error) {
	t.Helper()
	if err := Poll(timeout, f); err != nil {
		t.Fatal(err)
	}
}

// Poll is Eventually without a test: it returns f's last error, wrapped,
// when timeout passes before f returns nil.
func Poll(timeout time.Duration, f func() error) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not true within %v: %w", timeout, err)
		}
		<-tick.C
	}
}

// objectName makes a readable, unique name for a test object.
func objectName(t testing.TB, kind string) string {
	n := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' {
			return r
		}
		return '-'
	}, t.Name())
	if len(n) > 40 {
		n = n[:40]
	}
	return strings.ToLower(fmt.Sprintf("levee-test-%s-%s-%s-%d", n, kind, RunID(t), nameSeq.Add(1)))
}

var nameSeq atomic.Int64
