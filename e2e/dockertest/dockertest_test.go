package dockertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

func TestRunIDStablePerTestAndUniqueAcrossTests(t *testing.T) {
	var inner string
	t.Run("a", func(t *testing.T) {
		inner = RunID(t)
		if RunID(t) != inner {
			t.Error("RunID changed within one test")
		}
	})
	if RunID(t) == inner {
		t.Errorf("parent and subtest share run ID %s", inner)
	}
}

func TestPollReturnsLastError(t *testing.T) {
	n := 0
	if err := Poll(5*time.Second, func() error {
		n++
		if n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("Poll = %v after %d calls, want nil after 3", err, n)
	}
	err := Poll(50*time.Millisecond, func() error { return errors.New("never") })
	if err == nil || !strings.Contains(err.Error(), "never") {
		t.Fatalf("Poll timeout error = %v", err)
	}
}

// TestEchoContainerServesAndIsCleanedUp runs an echo image with a baked-in
// HEALTHCHECK (the binary probing itself) on a per-test network, talks to it, and checks that every
// labelled object is gone after the subtest's cleanup.
func TestEchoContainerServesAndIsCleanedUp(t *testing.T) {
	cli := Require(t)
	var runID string
	t.Run("run", func(t *testing.T) {
		cli := Require(t)
		runID = RunID(t)
		img := BuildImage(t, cli, "./cmd/echo", "EXPOSE 8080\n"+EchoDockerfileHealthcheck)
		net := Network(t, cli)
		id := Run(t, cli, Spec{
			Image:    img,
			Env:      []string{"ECHO_NAME=first"},
			Networks: []string{net},
			Labels:   map[string]string{"levee.enable": "true"},
		})
		ctx := context.Background()
		Eventually(t, 60*time.Second, func() error {
			h, err := Health(ctx, cli, id)
			if err != nil {
				return err
			}
			if h != "healthy" {
				return fmt.Errorf("health = %q", h)
			}
			return nil
		})
		ip := IPs(t, cli, id)[net]
		if ip == "" {
			t.Fatalf("no IP on network %s", net)
		}
		url := fmt.Sprintf("http://%s:%d/hello", ip, EchoPort)
		var reply struct {
			Hostname string `json:"hostname"`
			Name     string `json:"name"`
		}
		Eventually(t, 30*time.Second, func() error {
			resp, err := http.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			return json.NewDecoder(resp.Body).Decode(&reply)
		})
		if reply.Name != "first" || len(reply.Hostname) < 12 || id[:12] != reply.Hostname[:12] {
			t.Errorf("reply = %+v, want name first from container %s", reply, id[:12])
		}
	})
	if t.Failed() {
		return
	}
	ctx := context.Background()
	f := make(client.Filters).Add("label", Label+"="+runID)
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil || len(cs.Items) != 0 {
		t.Errorf("containers left after cleanup: %d (err %v)", len(cs.Items), err)
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil || len(ns.Items) != 0 {
		t.Errorf("networks left after cleanup: %d (err %v)", len(ns.Items), err)
	}
	is, err := cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil || len(is.Items) != 0 {
		t.Errorf("images left after cleanup: %d (err %v)", len(is.Items), err)
	}
}

func TestLeftoverNamesOnlyDeadProcesses(t *testing.T) {
	alive := func(pid int) bool { return pid == 42 }
	for _, c := range []struct {
		runID string
		want  bool
	}{
		{"42-abc-1", false}, // a process still running
		{"43-abc-1", true},  // a process that is gone
		{"abcdef-1", false}, // an ID of the older layout names no process
		{"", false},         // not a run ID
		{"0-abc-1", false},  // no process has ID 0
		{"-1-abc-1", false}, // nor a negative one
		{"43abc-1", false},  // the process ID is the whole first field
		{RunID(t), false},   // this process: alive for the real check too
	} {
		check := alive
		if c.runID == RunID(t) {
			check = processAlive
		}
		if got := leftover(c.runID, check); got != c.want {
			t.Errorf("leftover(%q) = %v, want %v", c.runID, got, c.want)
		}
	}
}

// TestSweepRemovesWhatAKilledTestLeft runs this test binary as a child
// that creates a labelled network and volume and is killed before its
// cleanup can run, as a go test timeout kills one; the sweep removes both,
// and leaves this (living) process's own objects alone.
func TestSweepRemovesWhatAKilledTestLeft(t *testing.T) {
	if os.Getenv("LEVEE_TEST_SWEEP_CHILD") == "1" {
		cli := Require(t)
		net := Network(t, cli)
		ctx := context.Background()
		if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: net + "-vol", Labels: map[string]string{Label: RunID(t)}}); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("created %s %s\n", RunID(t), net)
		select {} // killed here
	}
	cli := Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	mine := Network(t, cli)

	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSweepRemovesWhatAKilledTestLeft$", "-test.v")
	cmd.Env = append(os.Environ(), "LEVEE_TEST_SWEEP_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var childRun, childNet string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "created" {
			childRun, childNet = f[1], f[2]
			break
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if childRun == "" {
		t.Fatal("the child test created nothing")
	}
	// The child's objects are there, as a killed run leaves them, and
	// would be removed by hand at its own run ID only.
	t.Cleanup(func() { _ = removeLabelled(context.Background(), cli, childRun) })
	f := make(client.Filters).Add("label", Label+"="+childRun)
	if ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); err != nil || len(ns.Items) != 1 {
		t.Fatalf("before the sweep: networks of the killed run = %d (%v), want 1", len(ns.Items), err)
	}

	removed, err := sweep(ctx, cli, processAlive)
	if err != nil {
		t.Fatalf("sweep: %v", err)
	}
	if removed < 2 {
		t.Errorf("sweep removed %d objects, want at least the killed run's network and volume", removed)
	}
	if ns, _ := cli.NetworkList(ctx, client.NetworkListOptions{Filters: f}); len(ns.Items) != 0 {
		t.Errorf("network %s of the killed run is still there", childNet)
	}
	if vs, _ := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f}); len(vs.Items) != 0 {
		t.Errorf("volume of the killed run is still there")
	}
	if _, err := cli.NetworkInspect(ctx, mine, client.NetworkInspectOptions{}); err != nil {
		t.Errorf("the sweep removed this living run's network %s: %v", mine, err)
	}
}
