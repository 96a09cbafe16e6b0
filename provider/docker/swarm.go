package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/provider/labels"
)

// Swarm mode timing defaults (Options.SwarmPoll, Options.SwarmSettle).
const (
	// DefaultSwarmPoll is the period of the task poll while the swarm is
	// settled: the engine sends no event when a task on another node
	// stops, so the task list is read this often.
	DefaultSwarmPoll = 5 * time.Second
	// DefaultSwarmSettle is the period of the task poll after a service,
	// node or task container event, and while a labelled service runs
	// fewer or more tasks than it wants: scaling shows within it.
	DefaultSwarmSettle = 250 * time.Millisecond
	// swarmSettleWindow is how long after an event the settle period
	// applies: the manager records a task's new state shortly after the
	// event that announced it.
	swarmSettleWindow = 5 * time.Second
	// swarmUnsettledMax bounds the close polling while a labelled service
	// runs another number of tasks than it wants.
	swarmUnsettledMax = time.Minute
)

// swarmState is what one list of the swarm says.
type swarmState struct {
	services []swarm.Service
	tasks    []swarm.Task
	nodes    []swarm.Node
	networks []network.Summary
	// onNode are the port bindings of the tasks whose container this
	// engine runs, by task ID (see taskBindings); a task not in it is on
	// another node.
	onNode map[string][]binding
}

// listSwarm reads services (with their task counts), the tasks that
// should run, nodes and networks, each call within timeout.
func listSwarm(ctx context.Context, eng swarmEngine, host string, timeout time.Duration) (swarmState, error) {
	var st swarmState
	calls := []struct {
		what string
		call func(context.Context) error
	}{
		{"services", func(ctx context.Context) (err error) {
			st.services, err = eng.ServiceList(ctx, client.ServiceListOptions{Status: true})
			return err
		}},
		{"tasks", func(ctx context.Context) (err error) {
			st.tasks, err = eng.TaskList(ctx, client.TaskListOptions{Filters: make(client.Filters).Add("desired-state", "running")})
			return err
		}},
		{"nodes", func(ctx context.Context) (err error) {
			st.nodes, err = eng.NodeList(ctx, client.NodeListOptions{})
			return err
		}},
		{"networks", func(ctx context.Context) (err error) {
			st.networks, err = eng.NetworkList(ctx, client.NetworkListOptions{})
			return err
		}},
	}
	for _, c := range calls {
		if err := bounded(ctx, timeout, c.call); err != nil {
			return swarmState{}, fmt.Errorf("list swarm %s at %s: %w", c.what, host, err)
		}
	}
	return st, nil
}

// swarmFacts turns one list of the swarm into what the label grammar needs:
// one labels.Container per service (Service set), with its running tasks
// as Tasks. A task is a backend only when it runs, is meant to run, and
// its node is ready and not drained. settled is false while a service
// labelled under prefix runs another number of tasks than it wants, so the
// provider keeps polling closely until scaling has finished.
func swarmFacts(st swarmState, prefix string) (cache map[string]labels.Container, settled bool) {
	netName := map[string]string{}
	for _, n := range st.networks {
		netName[n.ID] = n.Name
	}
	usable := map[string]bool{}
	nodeAddr := map[string]string{}
	for _, n := range st.nodes {
		usable[n.ID] = n.Status.State == swarm.NodeStateReady && n.Spec.Availability != swarm.NodeAvailabilityDrain
		nodeAddr[n.ID] = nodeAddress(n)
	}
	svcName := map[string]string{}
	for _, s := range st.services {
		svcName[s.ID] = s.Spec.Name
	}
	byService := map[string][]labels.Task{}
	for _, t := range st.tasks {
		if t.Status.State != swarm.TaskStateRunning || t.DesiredState != swarm.TaskStateRunning || !usable[t.NodeID] {
			continue
		}
		byService[t.ServiceID] = append(byService[t.ServiceID], taskFacts(t, svcName[t.ServiceID], nodeAddr[t.NodeID], st.onNode))
	}
	cache = make(map[string]labels.Container, len(st.services))
	settled = true
	for _, s := range st.services {
		c := serviceFacts(s, netName)
		c.Tasks = byService[s.ID]
		sort.Slice(c.Tasks, func(i, j int) bool { return c.Tasks[i].Name < c.Tasks[j].Name })
		cache[s.ID] = c
		if labelled(c.Labels, prefix) && s.ServiceStatus != nil && uint64(len(c.Tasks)) != s.ServiceStatus.DesiredTasks {
			settled = false
		}
	}
	return cache, settled
}

func labelled(ls map[string]string, prefix string) bool {
	for k := range ls {
		if strings.HasPrefix(k, prefix+".") {
			return true
		}
	}
	return false
}

// serviceFacts describes a service: its labels, its networks (those of its
// task template, not the ingress) with its virtual IP on each, and the
// target ports of its endpoint as exposed ports.
func serviceFacts(s swarm.Service, netName map[string]string) labels.Container {
	c := labels.Container{ID: s.ID, Name: s.Spec.Name, Created: s.CreatedAt, Service: true}
	if len(s.Spec.Labels) > 0 {
		c.Labels = make(map[string]string, len(s.Spec.Labels))
		for k, v := range s.Spec.Labels {
			c.Labels[k] = v
		}
	}
	vip := map[string]string{}
	for _, v := range s.Endpoint.VirtualIPs {
		vip[v.NetworkID] = prefixAddr(v.Addr)
	}
	// The engine client fills TaskTemplate.Networks from the old spec
	// field for engines that keep them there (mobyEngine.ServiceList).
	for _, n := range s.Spec.TaskTemplate.Networks {
		id, name := n.Target, netName[n.Target]
		if name == "" {
			// A target given by name; find its ID for the VIP.
			name = n.Target
			for nid, nname := range netName {
				if nname == n.Target {
					id = nid
				}
			}
		}
		c.Networks = append(c.Networks, labels.Network{Name: name, IP: vip[id]})
	}
	sort.Slice(c.Networks, func(i, j int) bool { return c.Networks[i].Name < c.Networks[j].Name })
	for _, p := range s.Endpoint.Spec.Ports {
		if p.Protocol != network.TCP && p.Protocol != "" {
			continue
		}
		if n := int(p.TargetPort); n > 0 && !slices.Contains(c.ExposedPorts, n) {
			c.ExposedPorts = append(c.ExposedPorts, n)
		}
	}
	sort.Ints(c.ExposedPorts)
	return c
}

// taskFacts describes a running task of service: its name, its address on
// each of its networks, and the ports it publishes in host mode on its
// node, whose address is nodeAddr: read from its container's bindings when
// onNode has them, else from the task's port status.
func taskFacts(t swarm.Task, service, nodeAddr string, onNode map[string][]binding) labels.Task {
	lt := labels.Task{ID: t.ID, Name: taskName(t, service), NodeAddr: nodeAddr}
	if bs, ok := onNode[t.ID]; ok {
		lt.HostPorts, lt.AmbiguousPorts = pickHostPorts(bs, nodeAddr)
	} else {
		lt.HostPorts, lt.AmbiguousPorts = hostPorts(t)
	}
	for _, a := range t.NetworksAttachments {
		n := labels.Network{Name: a.Network.Spec.Name}
		if len(a.Addresses) > 0 {
			n.IP = prefixAddr(a.Addresses[0])
		}
		lt.Networks = append(lt.Networks, n)
	}
	sort.Slice(lt.Networks, func(i, j int) bool { return lt.Networks[i].Name < lt.Networks[j].Name })
	return lt
}

// nodeAddress is where node n's host-mode ports are reached: the address
// the swarm knows it by. A manager may report an unspecified address
// (0.0.0.0, when it listens on every interface); the host of its manager
// address is used then. "" when neither is known.
func nodeAddress(n swarm.Node) string {
	if usableAddr(n.Status.Addr) {
		return n.Status.Addr
	}
	if n.ManagerStatus == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(n.ManagerStatus.Addr)
	if err != nil || !usableAddr(host) {
		return ""
	}
	return host
}

// usableAddr is false for an empty or unspecified address (0.0.0.0, ::).
func usableAddr(a string) bool {
	if a == "" {
		return false
	}
	ip := net.ParseIP(a)
	return ip == nil || !ip.IsUnspecified()
}

// taskName is the name `docker service ps` shows: the service's name and
// the slot (web.2), or the node ID for a global service.
func taskName(t swarm.Task, service string) string {
	if service == "" {
		service = t.ServiceID
	}
	if t.Slot > 0 {
		return service + "." + strconv.Itoa(t.Slot)
	}
	return service + "." + t.NodeID
}

// prefixAddr turns 10.0.1.5/24 into "10.0.1.5", and no prefix into "".
func prefixAddr(p netip.Prefix) string {
	if !p.IsValid() {
		return ""
	}
	return p.Addr().String()
}
