package dockertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
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
	f := filters.NewArgs(filters.Arg("label", Label+"="+runID))
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil || len(cs) != 0 {
		t.Errorf("containers left after cleanup: %d (err %v)", len(cs), err)
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil || len(ns) != 0 {
		t.Errorf("networks left after cleanup: %d (err %v)", len(ns), err)
	}
	is, err := cli.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil || len(is) != 0 {
		t.Errorf("images left after cleanup: %d (err %v)", len(is), err)
	}
}
