package docker

import (
	"context"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"

	"github.com/levee-proxy/levee/provider/labels"
)

// hostModeTask is a running task of service s1 on node n1 publishing
// target 8080 on the given ports in host mode, in that order, with
// container cid.
func hostModeTask(id, cid string, ports ...uint32) swarm.Task {
	tk := swarm.Task{ID: id, ServiceID: "s1", Slot: 1, NodeID: "n1", DesiredState: swarm.TaskStateRunning}
	tk.Status.State = swarm.TaskStateRunning
	tk.Status.ContainerStatus = &swarm.ContainerStatus{ContainerID: cid}
	for _, p := range ports {
		tk.Status.PortStatus.Ports = append(tk.Status.PortStatus.Ports, swarm.PortConfig{Protocol: network.TCP,
			TargetPort: 8080, PublishedPort: p, PublishMode: swarm.PortConfigPublishModeHost})
	}
	return tk
}

// taskContainer is the inspect answer of task's container cid, with its
// 8080/tcp bound as bindings (host IP, host port) in that order.
func taskContainer(cid, task string, bindings ...[2]string) container.InspectResponse {
	r := ctr{id: cid, name: "web.1." + task, labels: map[string]string{swarmTaskLabel: task, swarmServiceLabel: "s1"}}.inspect()
	var pb []network.PortBinding
	for _, b := range bindings {
		pb = append(pb, network.PortBinding{HostIP: parseAddr(b[0]), HostPort: b[1]})
	}
	r.NetworkSettings.Ports = network.PortMap{network.MustParsePort("8080/tcp"): pb}
	return r
}

// taskOf lists the swarm (one node at nodeAddr), reads the bindings of the
// tasks this engine runs, and returns the facts of the only task.
func taskOf(t *testing.T, e *fakeSwarm, cache portCache, nodeAddr string) labels.Task {
	t.Helper()
	e.service("s1", "web", 1)
	e.smu.Lock()
	n := e.nodes["n1"]
	n.Status.Addr = nodeAddr
	e.nodes["n1"] = n
	e.smu.Unlock()
	st, err := listSwarm(context.Background(), e, "fake", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.onNode, err = taskBindings(context.Background(), e, time.Second, st.tasks, cache); err != nil {
		t.Fatal(err)
	}
	cache2, _ := swarmFacts(st, "levee")
	tasks := cache2["s1"].Tasks
	if len(tasks) != 1 {
		t.Fatalf("tasks %+v", tasks)
	}
	return tasks[0]
}

// The engine allocates a host-mode port for 0.0.0.0 and for [::]
// independently: a task may publish 8080 as 32772 (IPv4) and 32771 (IPv6),
// and the lower number is then another task's IPv4 port. For a task whose
// container this engine runs, the port is the binding of the node
// address's family, whichever order the engine lists them in.
func TestSwarmHostPortOfATaskOnThisNodeIsItsContainersBindingForTheNodesFamily(t *testing.T) {
	v4, v6 := [2]string{"0.0.0.0", "32772"}, [2]string{"::", "32771"}
	cases := []struct {
		name     string
		status   []uint32    // the task's port status, in the engine's order
		bindings [][2]string // the container's, in the engine's order
		nodeAddr string
		want     map[int]int
	}{
		{"IPv4 listed first", []uint32{32772, 32771}, [][2]string{v4, v6}, "127.0.0.1", map[int]int{8080: 32772}},
		{"IPv6 listed first", []uint32{32771, 32772}, [][2]string{v6, v4}, "127.0.0.1", map[int]int{8080: 32772}},
		{"IPv6 node", []uint32{32772, 32771}, [][2]string{v4, v6}, "fd00::5", map[int]int{8080: 32771}},
		{"IPv4 only", []uint32{32772}, [][2]string{v4}, "10.0.0.5", map[int]int{8080: 32772}},
		{"bound on the node's own address", []uint32{32772, 32771}, [][2]string{{"10.0.0.5", "32772"}, {"10.0.0.6", "32771"}}, "10.0.0.5", map[int]int{8080: 32772}},
		{"one socket for both families", []uint32{32772}, [][2]string{{"", "32772"}}, "10.0.0.5", map[int]int{8080: 32772}},
		{"IPv6 only, IPv4 node: no port", []uint32{32771}, [][2]string{v6}, "10.0.0.5", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFakeSwarm()
			e.smu.Lock()
			e.tasks["t1"] = hostModeTask("t1", "c1", tc.status...)
			e.smu.Unlock()
			e.set(taskContainer("c1", "t1", tc.bindings...))
			cache := portCache{}
			got := taskOf(t, e, cache, tc.nodeAddr)
			if !reflect.DeepEqual(got.HostPorts, tc.want) || got.AmbiguousPorts != nil {
				t.Fatalf("host ports %v, ambiguous %v; want %v, none", got.HostPorts, got.AmbiguousPorts, tc.want)
			}
			// The container keeps its bindings for its life: the next
			// list asks the engine nothing more.
			taskOf(t, e, cache, tc.nodeAddr)
			if _, inspects := e.counts(); inspects["c1"] != 1 {
				t.Fatalf("container inspected %d times over two lists, want once", inspects["c1"])
			}
		})
	}
}

// A task on another node is known only by its port status, which lists
// the numbers without their addresses: two different numbers for one
// target are ambiguous, in either order, and neither is kept.
func TestSwarmHostPortOfATaskOnAnotherNodeWithTwoNumbersIsAmbiguous(t *testing.T) {
	cases := []struct {
		name      string
		status    []uint32
		want      map[int]int
		ambiguous map[int][]int
	}{
		{"0.0.0.0 then [::]", []uint32{32772, 32771}, nil, map[int][]int{8080: {32771, 32772}}},
		{"[::] then 0.0.0.0", []uint32{32771, 32772}, nil, map[int][]int{8080: {32771, 32772}}},
		{"the same number twice", []uint32{32770, 32770}, map[int]int{8080: 32770}, nil},
		{"one number", []uint32{32770}, map[int]int{8080: 32770}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newFakeSwarm()
			e.smu.Lock()
			e.tasks["t1"] = hostModeTask("t1", "elsewhere", tc.status...)
			e.smu.Unlock()
			got := taskOf(t, e, portCache{}, "10.0.0.7")
			if !reflect.DeepEqual(got.HostPorts, tc.want) || !reflect.DeepEqual(got.AmbiguousPorts, tc.ambiguous) {
				t.Fatalf("host ports %v, ambiguous %v; want %v, %v", got.HostPorts, got.AmbiguousPorts, tc.want, tc.ambiguous)
			}
		})
	}
}

// A container under the task's container ID that is not the task's (it
// carries another task's ID) is not read: its bindings would send the
// task's traffic elsewhere.
func TestSwarmHostPortIgnoresAContainerThatIsNotTheTask(t *testing.T) {
	e := newFakeSwarm()
	e.smu.Lock()
	e.tasks["t1"] = hostModeTask("t1", "c1", 32772, 32771)
	e.smu.Unlock()
	e.set(taskContainer("c1", "another-task", [2]string{"0.0.0.0", "32771"}))
	got := taskOf(t, e, portCache{}, "127.0.0.1")
	if got.HostPorts != nil || !reflect.DeepEqual(got.AmbiguousPorts, map[int][]int{8080: {32771, 32772}}) {
		t.Fatalf("host ports %v, ambiguous %v; want none, the two numbers", got.HostPorts, got.AmbiguousPorts)
	}
}

// The cache forgets the containers of tasks that are gone.
func TestSwarmHostPortCacheIsPruned(t *testing.T) {
	e := newFakeSwarm()
	e.smu.Lock()
	e.tasks["t1"] = hostModeTask("t1", "c1", 32772)
	e.smu.Unlock()
	e.set(taskContainer("c1", "t1", [2]string{"0.0.0.0", "32772"}))
	cache := portCache{}
	taskOf(t, e, cache, "127.0.0.1")
	if _, ok := cache["c1"]; !ok {
		t.Fatal("the task's container is not cached")
	}
	if _, err := taskBindings(context.Background(), e, time.Second, nil, cache); err != nil {
		t.Fatal(err)
	}
	if len(cache) != 0 {
		t.Fatalf("cache %v after the task went, want empty", cache)
	}
}

// A container event of a task forgets its cached bindings: a task
// container restarted in place (docker restart) binds new host ports.
func TestSwarmHostPortCacheForgetsAContainerOnItsEvents(t *testing.T) {
	e := newFakeSwarm()
	p, err := newProvider(Options{Swarm: true, Clock: newFakeClock()}, e)
	if err != nil {
		t.Fatal(err)
	}
	p.ports["c1"] = portEntry{onNode: true, bindings: []binding{{target: 8080, hostIP: "0.0.0.0", port: 32772}}}
	p.ports["c2"] = portEntry{}
	p.swarmEvent(events.Message{Type: events.ContainerEventType, Action: "start",
		Actor: events.Actor{ID: "c1", Attributes: map[string]string{swarmServiceLabel: "s1", swarmTaskLabel: "t1"}}})
	if _, ok := p.ports["c1"]; ok {
		t.Fatal("the restarted task container's bindings are still cached")
	}
	if _, ok := p.ports["c2"]; !ok {
		t.Fatal("another container's entry was dropped")
	}
}

// parseAddr is a binding's host address, none for "".
func parseAddr(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	return netip.MustParseAddr(s)
}
