package dockertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
)

// ComposeProjectPrefix begins the name of every compose project a test
// runs; the rest of the name is the test's run ID, so a project left by a
// killed test is swept like any labelled object.
const ComposeProjectPrefix = "levee-e2e-"

// A killed `go test` (a timeout, a signal) runs no cleanup, so what its
// tests created stays on the engine. The sweep, done once per test process
// before its first test uses the engine, removes every object whose run ID
// names a process that no longer exists: the reaper testcontainers runs
// beside its tests, without a container of its own. A run ID begins with
// the process ID (RunID), so objects of a test process still running, here
// or in another checkout, are never touched. An ID that names no process
// in that form (an older layout) is left alone.
var sweepOnce sync.Once

// sweepTimeout bounds the whole sweep; a slow engine delays the first test
// by at most this much.
const sweepTimeout = time.Minute

// sweepLeftovers removes the objects of dead test processes; failures are
// reported to logf and never fail the test that happened to come first.
func sweepLeftovers(cli *client.Client, logf func(string, ...any)) {
	sweepOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sweepTimeout)
		defer cancel()
		removed, err := sweep(ctx, cli, processAlive)
		if removed > 0 {
			logf("dockertest: removed %d objects left by killed test runs", removed)
		}
		if err != nil {
			logf("dockertest: sweeping objects of killed test runs: %v", err)
		}
	})
}

// runProcess returns the process ID a run ID begins with.
func runProcess(runID string) (int, bool) {
	head, _, ok := strings.Cut(runID, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(head)
	return pid, err == nil && pid > 0
}

// processAlive reports whether a process with that ID exists (EPERM: it
// exists, under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// leftover reports whether an object with that run ID belongs to a test
// process that is gone.
func leftover(runID string, alive func(int) bool) bool {
	pid, ok := runProcess(runID)
	return ok && !alive(pid)
}

// sweep removes the leftovers: containers first (they pin networks, volumes
// and images), then services, networks, volumes and images. It returns how
// many objects it removed.
func sweep(ctx context.Context, cli *client.Client, alive func(int) bool) (int, error) {
	var errs []error
	removed := 0
	note := func(err error, what string) {
		if err == nil {
			removed++
		} else if !cerrdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("remove %s: %w", what, err))
		}
	}
	tested := make(client.Filters).Add("label", Label)
	composed := make(client.Filters).Add("label", "com.docker.compose.project")
	runOf := func(labels map[string]string) string {
		if id, ok := labels[Label]; ok {
			return id
		}
		return strings.TrimPrefix(labels["com.docker.compose.project"], ComposeProjectPrefix)
	}
	isLeft := func(labels map[string]string) bool {
		if _, ok := labels[Label]; !ok && !strings.HasPrefix(labels["com.docker.compose.project"], ComposeProjectPrefix) {
			return false
		}
		return leftover(runOf(labels), alive)
	}
	for _, f := range []client.Filters{tested, composed} {
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			errs = append(errs, fmt.Errorf("list containers: %w", err))
		}
		for _, c := range cs.Items {
			if isLeft(c.Labels) {
				note(second(cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})), "container "+c.ID)
			}
		}
	}
	// Services exist only on a Swarm manager; elsewhere the list is an error
	// that says so, and there is nothing to sweep.
	if ss, err := cli.ServiceList(ctx, client.ServiceListOptions{Filters: tested}); err == nil {
		for _, s := range ss.Items {
			if isLeft(s.Spec.Labels) {
				note(second(cli.ServiceRemove(ctx, s.ID, client.ServiceRemoveOptions{})), "service "+s.Spec.Name)
			}
		}
	}
	for _, f := range []client.Filters{tested, composed} {
		ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
		if err != nil {
			errs = append(errs, fmt.Errorf("list networks: %w", err))
		}
		for _, n := range ns.Items {
			if isLeft(n.Labels) {
				note(second(cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{})), "network "+n.Name)
			}
		}
		vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
		if err != nil {
			errs = append(errs, fmt.Errorf("list volumes: %w", err))
		}
		for _, v := range vs.Items {
			if isLeft(v.Labels) {
				note(second(cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true})), "volume "+v.Name)
			}
		}
	}
	is, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: tested})
	if err != nil {
		errs = append(errs, fmt.Errorf("list images: %w", err))
	}
	for _, im := range is.Items {
		if isLeft(im.Labels) {
			_, err := cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			note(err, "image "+im.ID)
		}
	}
	return removed, errors.Join(errs...)
}

// processID begins every run ID of this process: the process ID (what the
// sweep checks), then a clock reading that keeps two processes that reuse
// one ID apart.
var processID = fmt.Sprintf("%d-%x", os.Getpid(), time.Now().UnixNano()&0xffffff)

// second is the error of a call that also returns a result the sweep does
// not read.
func second[T any](_ T, err error) error { return err }
