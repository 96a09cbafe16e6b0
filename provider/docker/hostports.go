package docker

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/network"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/swarm"
)

// How a Levee outside any container reaches a Swarm task: at its node's
// address and the port the task publishes there in host mode. An engine
// publishes a host-mode port once per address family (0.0.0.0 and [::]),
// and its allocators pick the two numbers independently, so one task may
// publish 8080 as 0.0.0.0:32772 and [::]:32771 while another has
// 0.0.0.0:32771. The task's port status lists both numbers without their
// addresses; dialling the wrong one at an IPv4 node address is refused or
// reaches another task, possibly of another service. So the port is read
// where the address is known: the bindings of the task's container, when
// this engine runs it (the container also proves it is the task: it
// carries the task's ID). For a task on another node only the port
// status is known: one number is used; several different numbers are
// ambiguous and the task is not dialled at its node (W090).

// binding is one host port binding of a task's container: the container's
// TCP port, the host address it is bound on, and the host port.
type binding struct {
	target int
	hostIP string
	port   int
}

// hostPorts reads the host-mode TCP ports of task t from its port status,
// as for a task on another node: target → published when the task reports
// one number for the target, else target → the numbers, ascending, in
// ambiguous. Ingress ports belong to the routing mesh, not to the task,
// and UDP carries no HTTP.
func hostPorts(t swarm.Task) (ports map[int]int, ambiguous map[int][]int) {
	byTarget := map[int][]int{}
	for _, p := range t.Status.PortStatus.Ports {
		if !hostTCP(p) {
			continue
		}
		target, published := int(p.TargetPort), int(p.PublishedPort)
		if target == 0 || published == 0 {
			continue
		}
		if !slices.Contains(byTarget[target], published) {
			byTarget[target] = append(byTarget[target], published)
		}
	}
	return settle(byTarget)
}

// pickHostPorts chooses, from the bindings of a task's container, the host
// port of each target that a connection to nodeAddr reaches: a binding on
// the unspecified address of nodeAddr's family (0.0.0.0 for an IPv4 node,
// [::] for an IPv6 one), on nodeAddr itself, or on no address at all (an
// engine that binds one socket for both). Several different ports for one
// target are ambiguous.
func pickHostPorts(bs []binding, nodeAddr string) (ports map[int]int, ambiguous map[int][]int) {
	node := net.ParseIP(nodeAddr)
	byTarget := map[int][]int{}
	for _, b := range bs {
		if !reaches(b.hostIP, node) || slices.Contains(byTarget[b.target], b.port) {
			continue
		}
		byTarget[b.target] = append(byTarget[b.target], b.port)
	}
	return settle(byTarget)
}

// reaches reports whether a port bound on hostIP accepts connections to
// node. A node address that is not an IP is taken as IPv4.
func reaches(hostIP string, node net.IP) bool {
	if hostIP == "" {
		return true
	}
	ip := net.ParseIP(hostIP)
	switch {
	case ip == nil:
		return false
	case node != nil && ip.Equal(node):
		return true
	case !ip.IsUnspecified():
		return false
	}
	nodeV6 := node != nil && node.To4() == nil
	return (ip.To4() == nil) == nodeV6
}

// settle splits ports by target into the certain (one number) and the
// ambiguous (several, ascending); nil maps when there are none.
func settle(byTarget map[int][]int) (ports map[int]int, ambiguous map[int][]int) {
	for target, ps := range byTarget {
		if len(ps) == 1 {
			if ports == nil {
				ports = map[int]int{}
			}
			ports[target] = ps[0]
			continue
		}
		if ambiguous == nil {
			ambiguous = map[int][]int{}
		}
		slices.Sort(ps)
		ambiguous[target] = ps
	}
	return ports, ambiguous
}

func hostTCP(p swarm.PortConfig) bool {
	return p.PublishMode == swarm.PortConfigPublishModeHost && (p.Protocol == network.TCP || p.Protocol == "")
}

// portCache holds, by container ID, what inspecting a task's container
// said: its bindings when this engine runs it, or that it does not (the
// task is on another node). A task's container keeps its bindings for its
// life (Swarm replaces a task, it never restarts its container), so each
// container is inspected once.
type portCache map[string]portEntry

type portEntry struct {
	onNode   bool
	bindings []binding
}

// taskBindings returns the bindings of the running tasks, among tasks,
// whose container this engine runs and carries the task's ID, by task ID,
// inspecting (within timeout each) the containers cache does not know. A
// task that publishes no host-mode port costs nothing. cache is pruned to
// the containers of tasks.
func taskBindings(ctx context.Context, eng engine, timeout time.Duration, tasks []swarm.Task, cache portCache) (map[string][]binding, error) {
	out := map[string][]binding{}
	seen := map[string]bool{}
	for _, t := range tasks {
		cs := t.Status.ContainerStatus
		if t.Status.State != swarm.TaskStateRunning || cs == nil || cs.ContainerID == "" || !slices.ContainsFunc(t.Status.PortStatus.Ports, hostTCP) {
			continue
		}
		seen[cs.ContainerID] = true
		e, known := cache[cs.ContainerID]
		if !known {
			info, err := inspect(ctx, eng, timeout, cs.ContainerID)
			switch {
			case isNotFound(err): // on another node
			case err != nil:
				return nil, err
			default:
				e = containerBindings(info, t.ID)
			}
			// A container of this node without bindings yet is asked
			// again on the next list.
			if !e.onNode || len(e.bindings) > 0 {
				cache[cs.ContainerID] = e
			}
		}
		if e.onNode && len(e.bindings) > 0 {
			out[t.ID] = e.bindings
		}
	}
	for id := range cache {
		if !seen[id] {
			delete(cache, id)
		}
	}
	return out, nil
}

// containerBindings reads the TCP port bindings of a running container
// that is task's (its com.docker.swarm.task.id label); another container
// under the same ID is not the task's and counts as not on this node.
func containerBindings(info container.InspectResponse, task string) portEntry {
	if info.Config == nil || info.Config.Labels[swarmTaskLabel] != task || !routable(info) || info.NetworkSettings == nil {
		return portEntry{}
	}
	e := portEntry{onNode: true}
	for p, bs := range info.NetworkSettings.Ports {
		if p.Proto() != network.TCP || p.Num() == 0 {
			continue
		}
		for _, b := range bs {
			n, err := strconv.Atoi(b.HostPort)
			if err != nil || n <= 0 {
				continue
			}
			e.bindings = append(e.bindings, binding{target: int(p.Num()), hostIP: addrText(b.HostIP), port: n})
		}
	}
	return e
}

// addrText is an address as text, "" for none (a binding on every
// address).
func addrText(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}

// publishedPorts are the TCP ports a container publishes on its host,
// container port → host port, for a Levee on another machine: a binding on
// every address (no address, 0.0.0.0) first, else one on a specific IPv4
// address, else one on IPv6. nil when it publishes none.
func publishedPorts(info container.InspectResponse) map[int]int {
	var out map[int]int
	for p, bs := range info.NetworkSettings.Ports {
		if p.Proto() != network.TCP || p.Num() == 0 {
			continue
		}
		best, rank := 0, 0
		for _, b := range bs {
			n, err := strconv.Atoi(b.HostPort)
			if err != nil || n <= 0 {
				continue
			}
			r := 1 // IPv6
			switch {
			case !b.HostIP.IsValid() || (b.HostIP.Is4() && b.HostIP.IsUnspecified()):
				r = 3
			case b.HostIP.Is4():
				r = 2
			}
			if r > rank || (r == rank && n < best) {
				best, rank = n, r
			}
		}
		if best > 0 {
			if out == nil {
				out = map[int]int{}
			}
			out[int(p.Num())] = best
		}
	}
	return out
}
