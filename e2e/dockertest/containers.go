package dockertest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
)

// opTimeout bounds one engine call made by a helper.
const opTimeout = time.Minute

// Spec describes a test container. Only Image is required.
type Spec struct {
	// Image is the image tag or ID, e.g. from BuildImage.
	Image string
	// Name defaults to a unique name derived from the test name.
	Name string
	// Labels are added to levee.test=<run id>.
	Labels map[string]string
	// Env is KEY=value pairs, e.g. ECHO_NAME=blue.
	Env []string
	// Cmd is passed to the image's ENTRYPOINT.
	Cmd []string
	// Networks to attach, in order; the first is used at creation. Empty
	// means the engine's default bridge.
	Networks []string
	// ExposedPorts adds TCP ports to those the image EXPOSEs.
	ExposedPorts []int
	// Healthcheck overrides the image's HEALTHCHECK.
	Healthcheck *container.HealthConfig
	// Publish are TCP ports published on an ephemeral port of the host's
	// every address (PublishedPort reads which).
	Publish []int
	// Restart is the restart policy ("" none; unless-stopped brings the
	// container back with its engine).
	Restart container.RestartPolicyMode
	// Binds are bind mounts, "host-path:container-path[:ro]"; the images
	// run as 65532, so what they read must be readable by others.
	Binds []string
}

// Create creates (but does not start) a container from spec, labelled for
// cleanup, and returns its ID.
func Create(t testing.TB, cli *client.Client, spec Spec) string {
	t.Helper()
	Cleanup(t, cli)
	labels := map[string]string{Label: RunID(t)}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	cfg := &container.Config{
		Image:       spec.Image,
		Labels:      labels,
		Env:         spec.Env,
		Cmd:         spec.Cmd,
		Healthcheck: spec.Healthcheck,
	}
	if len(spec.ExposedPorts) > 0 {
		cfg.ExposedPorts = network.PortSet{}
		for _, p := range spec.ExposedPorts {
			cfg.ExposedPorts[network.MustParsePort(strconv.Itoa(p)+"/tcp")] = struct{}{}
		}
	}
	var netCfg *network.NetworkingConfig
	if len(spec.Networks) > 0 {
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{spec.Networks[0]: {}}}
	}
	name := spec.Name
	if name == "" {
		name = objectName(t, "c")
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	hostCfg := &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: spec.Restart}, Binds: spec.Binds}
	if len(spec.Publish) > 0 {
		hostCfg.PortBindings = network.PortMap{}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = network.PortSet{}
		}
		for _, p := range spec.Publish {
			port := network.MustParsePort(strconv.Itoa(p) + "/tcp")
			cfg.ExposedPorts[port] = struct{}{}
			hostCfg.PortBindings[port] = []network.PortBinding{{}}
		}
	}
	resp, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hostCfg, NetworkingConfig: netCfg, Name: name})
	if err != nil {
		t.Fatalf("create container %s from %s: %v", name, spec.Image, err)
	}
	for _, n := range spec.Networks[min(1, len(spec.Networks)):] {
		Connect(t, cli, n, resp.ID)
	}
	return resp.ID
}

// Run creates and starts a container from spec and returns its ID.
func Run(t testing.TB, cli *client.Client, spec Spec) string {
	t.Helper()
	id := Create(t, cli, spec)
	Start(t, cli, id)
	return id
}

// Start starts a created or stopped container.
func Start(t testing.TB, cli *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		t.Fatalf("start container %s: %v", id, err)
	}
}

// Stop stops a container, killing it after a 5 s grace period.
func Stop(t testing.TB, cli *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	grace := 5
	if _, err := cli.ContainerStop(ctx, id, client.ContainerStopOptions{Timeout: &grace}); err != nil {
		t.Fatalf("stop container %s: %v", id, err)
	}
}

// Remove force-removes a container.
func Remove(t testing.TB, cli *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatalf("remove container %s: %v", id, err)
	}
}

// Network creates a bridge network labelled for cleanup and returns its name.
func Network(t testing.TB, cli *client.Client) string {
	t.Helper()
	Cleanup(t, cli)
	name := objectName(t, "n")
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	_, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: map[string]string{Label: RunID(t)}})
	if err != nil {
		t.Fatalf("create network %s: %v", name, err)
	}
	return name
}

// Connect attaches container id to network net.
func Connect(t testing.TB, cli *client.Client, net, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := cli.NetworkConnect(ctx, net, client.NetworkConnectOptions{Container: id}); err != nil {
		t.Fatalf("connect container %s to network %s: %v", id, net, err)
	}
}

// Disconnect detaches container id from network net.
func Disconnect(t testing.TB, cli *client.Client, net, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := cli.NetworkDisconnect(ctx, net, client.NetworkDisconnectOptions{Container: id}); err != nil {
		t.Fatalf("disconnect container %s from network %s: %v", id, net, err)
	}
}

// IPs returns the container's IP address per network name.
func IPs(t testing.TB, cli *client.Client, id string) map[string]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect container %s: %v", id, err)
	}
	info := r.Container
	ips := map[string]string{}
	if info.NetworkSettings != nil {
		for name, ep := range info.NetworkSettings.Networks {
			if ep != nil && ep.IPAddress.IsValid() {
				ips[name] = ep.IPAddress.String()
			}
		}
	}
	return ips
}

// IP returns the container's address on its first network by name.
func IP(t testing.TB, cli *client.Client, id string) string {
	t.Helper()
	ips := IPs(t, cli, id)
	names := make([]string, 0, len(ips))
	for n := range ips {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatalf("container %s has no IP address", id)
	}
	return ips[names[0]]
}

// Health returns the container's health status ("starting", "healthy",
// "unhealthy"), or "" when it has no health check.
func Health(ctx context.Context, cli *client.Client, id string) (string, error) {
	r, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect container %s: %w", id, err)
	}
	info := r.Container
	if info.State == nil || info.State.Health == nil {
		return "", nil
	}
	return string(info.State.Health.Status), nil
}

// PublishedPort is the host port container id publishes its TCP port on
// (0 when none).
func PublishedPort(t testing.TB, cli *client.Client, id string, port int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	r, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatalf("inspect container %s: %v", id, err)
	}
	if r.Container.NetworkSettings == nil {
		return 0
	}
	for _, b := range r.Container.NetworkSettings.Ports[network.MustParsePort(strconv.Itoa(port)+"/tcp")] {
		if n, err := strconv.Atoi(b.HostPort); err == nil && n > 0 {
			return n
		}
	}
	return 0
}
