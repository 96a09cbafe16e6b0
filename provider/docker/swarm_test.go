package docker

import (
	"context"
	"errors"
	"net/netip"
	"reflect"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"

	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
)

// fakeSwarm is a fakeEngine that is also a Swarm manager.
type fakeSwarm struct {
	*fakeEngine
	smu      sync.Mutex
	services map[string]swarm.Service
	tasks    map[string]swarm.Task
	nodes    map[string]swarm.Node
	nets     []network.Summary
	slists   int
}

func newFakeSwarm() *fakeSwarm {
	return &fakeSwarm{
		fakeEngine: newFakeEngine(),
		services:   map[string]swarm.Service{},
		tasks:      map[string]swarm.Task{},
		nodes: map[string]swarm.Node{"n1": {ID: "n1", Spec: swarm.NodeSpec{Availability: swarm.NodeAvailabilityActive},
			Status: swarm.NodeStatus{State: swarm.NodeStateReady}}},
		nets: []network.Summary{{Network: network.Network{ID: "netfront", Name: "front"}}, {Network: network.Network{ID: "netingress", Name: "ingress"}}},
	}
}

func (e *fakeSwarm) failure() error {
	e.fakeEngine.mu.Lock()
	defer e.fakeEngine.mu.Unlock()
	return e.down
}

func (e *fakeSwarm) ServiceList(ctx context.Context, _ client.ServiceListOptions) ([]swarm.Service, error) {
	if err := e.failure(); err != nil {
		return nil, err
	}
	e.smu.Lock()
	defer e.smu.Unlock()
	e.slists++
	var out []swarm.Service
	for _, s := range e.services {
		running := uint64(0)
		for _, t := range e.tasks {
			if t.ServiceID == s.ID && t.Status.State == swarm.TaskStateRunning {
				running++
			}
		}
		want := uint64(0)
		if s.Spec.Mode.Replicated != nil && s.Spec.Mode.Replicated.Replicas != nil {
			want = *s.Spec.Mode.Replicated.Replicas
		}
		s.ServiceStatus = &swarm.ServiceStatus{RunningTasks: running, DesiredTasks: want}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (e *fakeSwarm) TaskList(ctx context.Context, _ client.TaskListOptions) ([]swarm.Task, error) {
	if err := e.failure(); err != nil {
		return nil, err
	}
	e.smu.Lock()
	defer e.smu.Unlock()
	var out []swarm.Task
	for _, t := range e.tasks {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

func (e *fakeSwarm) NodeList(ctx context.Context, _ client.NodeListOptions) ([]swarm.Node, error) {
	if err := e.failure(); err != nil {
		return nil, err
	}
	e.smu.Lock()
	defer e.smu.Unlock()
	var out []swarm.Node
	for _, n := range e.nodes {
		out = append(out, n)
	}
	return out, nil
}

func (e *fakeSwarm) NetworkList(ctx context.Context, _ client.NetworkListOptions) ([]network.Summary, error) {
	if err := e.failure(); err != nil {
		return nil, err
	}
	return e.nets, nil
}

// service sets a labelled service "web" on network front wanting n replicas.
func (e *fakeSwarm) service(id, name string, replicas uint64) {
	e.smu.Lock()
	defer e.smu.Unlock()
	s := swarm.Service{ID: id}
	s.Spec.Name = name
	s.Spec.Labels = map[string]string{"levee.enable": "true", "levee.http." + name + ".host": name + ".example.com"}
	s.Spec.Mode.Replicated = &swarm.ReplicatedService{Replicas: &replicas}
	s.Spec.TaskTemplate.Networks = []swarm.NetworkAttachmentConfig{{Target: "netfront"}}
	s.Endpoint.VirtualIPs = []swarm.EndpointVirtualIP{{NetworkID: "netfront", Addr: netip.MustParsePrefix("10.0.1.2/24")}, {NetworkID: "netingress", Addr: netip.MustParsePrefix("10.255.0.2/16")}}
	e.services[id] = s
}

func (e *fakeSwarm) task(id, service string, slot int, node string, state swarm.TaskState, ip string) {
	e.smu.Lock()
	defer e.smu.Unlock()
	t := swarm.Task{ID: id, ServiceID: service, Slot: slot, NodeID: node, DesiredState: swarm.TaskStateRunning}
	t.Status.State = state
	t.NetworksAttachments = []swarm.NetworkAttachment{
		{Network: swarm.Network{ID: "netfront", Spec: swarm.NetworkSpec{Annotations: swarm.Annotations{Name: "front"}}}, Addresses: []netip.Prefix{netip.MustParsePrefix(ip + "/24")}},
	}
	e.tasks[id] = t
}

func (e *fakeSwarm) node(id string, state swarm.NodeState, avail swarm.NodeAvailability) {
	e.smu.Lock()
	defer e.smu.Unlock()
	e.nodes[id] = swarm.Node{ID: id, Spec: swarm.NodeSpec{Availability: avail}, Status: swarm.NodeStatus{State: state}}
}

func taskNames(cs []labels.Container) []string {
	var out []string
	for _, c := range cs {
		for _, t := range c.Tasks {
			out = append(out, t.Name+"="+t.Networks[0].IP)
		}
	}
	return out
}

func TestSwarmFactsKeepRunningTasksOnUsableNodes(t *testing.T) {
	e := newFakeSwarm()
	e.service("s1", "web", 5)
	e.node("down", swarm.NodeStateDown, swarm.NodeAvailabilityActive)
	e.node("drained", swarm.NodeStateReady, swarm.NodeAvailabilityDrain)
	e.node("paused", swarm.NodeStateReady, swarm.NodeAvailabilityPause)
	e.task("t1", "s1", 1, "n1", swarm.TaskStateRunning, "10.0.1.5")
	e.task("t2", "s1", 2, "n1", swarm.TaskStateStarting, "10.0.1.6")
	e.task("t3", "s1", 3, "down", swarm.TaskStateRunning, "10.0.1.7")
	e.task("t4", "s1", 4, "drained", swarm.TaskStateRunning, "10.0.1.8")
	e.task("t5", "s1", 5, "paused", swarm.TaskStateRunning, "10.0.1.9")
	e.task("t6", "s1", 6, "gone", swarm.TaskStateRunning, "10.0.1.10")
	st, err := listSwarm(context.Background(), e, "fake", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cache, settled := swarmFacts(st, "levee")
	c := cache["s1"]
	if got, want := taskNames([]labels.Container{c}), []string{"web.1=10.0.1.5", "web.5=10.0.1.9"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tasks %v, want %v", got, want)
	}
	if settled {
		t.Fatal("2 of 5 replicas usable: not settled")
	}
	if !c.Service || c.Name != "web" || c.Labels["levee.enable"] != "true" {
		t.Fatalf("service facts %+v", c)
	}
	// The service's networks are its task template's (not the ingress),
	// with its virtual IP.
	if want := []labels.Network{{Name: "front", IP: "10.0.1.2"}}; !reflect.DeepEqual(c.Networks, want) {
		t.Fatalf("networks %+v, want %+v", c.Networks, want)
	}
}

func TestSwarmFactsSettled(t *testing.T) {
	e := newFakeSwarm()
	e.service("s1", "web", 1)
	e.task("t1", "s1", 1, "n1", swarm.TaskStateRunning, "10.0.1.5")
	e.smu.Lock()
	unlabelled := swarm.Service{ID: "s2"}
	unlabelled.Spec.Name = "other"
	n := uint64(3)
	unlabelled.Spec.Mode.Replicated = &swarm.ReplicatedService{Replicas: &n}
	e.services["s2"] = unlabelled
	e.smu.Unlock()
	st, err := listSwarm(context.Background(), e, "fake", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, settled := swarmFacts(st, "levee"); !settled {
		t.Fatal("only an unlabelled service is short of replicas: settled")
	}
}

func startSwarm(t *testing.T, e *fakeSwarm, opts Options) *harness {
	t.Helper()
	opts.Swarm = true
	h := newHarness(t, opts, func(opts Options) (*Provider, error) { return newProvider(opts, e) })
	h.eng = e.fakeEngine
	return h
}

func TestSwarmProviderFollowsScaling(t *testing.T) {
	e := newFakeSwarm()
	e.service("s1", "web", 2)
	e.task("t1", "s1", 1, "n1", swarm.TaskStateRunning, "10.0.1.5")
	e.task("t2", "s1", 2, "n1", swarm.TaskStateRunning, "10.0.1.6")
	h := startSwarm(t, e, Options{})
	call, u := h.rec.next(t)
	if u.Source != config.SourceSwarm || call.parser.Source != config.SourceSwarm {
		t.Fatalf("source %q, parser source %q: want swarm", u.Source, call.parser.Source)
	}
	if got := taskNames(call.containers); !reflect.DeepEqual(got, []string{"web.1=10.0.1.5", "web.2=10.0.1.6"}) {
		t.Fatalf("tasks %v", got)
	}
	s := h.eng.stream(t)
	// Settled and no event yet: the slow poll is armed.
	h.clock.expectTimer(t, DefaultSwarmPoll)

	// Scale to 3: the service event re-lists at once, the new task is not
	// running yet, so polling goes to the settle period until it is.
	e.service("s1", "web", 3)
	e.task("t3", "s1", 3, "n1", swarm.TaskStatePreparing, "10.0.1.7")
	s.send(t, events.ServiceEventType, "update", "s1", nil)
	h.clock.expectTimer(t, DefaultSwarmSettle)
	e.task("t3", "s1", 3, "n1", swarm.TaskStateRunning, "10.0.1.7")
	h.clock.Advance(DefaultSwarmSettle)
	call, _ = h.rec.next(t)
	if got := taskNames(call.containers); len(got) != 3 {
		t.Fatalf("after scale to 3 and a settle poll: %v", got)
	}

	// A task on another node stops without any event: a poll sees it.
	e.smu.Lock()
	delete(e.tasks, "t2")
	e.smu.Unlock()
	h.clock.expectTimer(t, DefaultSwarmSettle)
	h.clock.Advance(DefaultSwarmSettle)
	call, _ = h.rec.next(t)
	if got := taskNames(call.containers); !reflect.DeepEqual(got, []string{"web.1=10.0.1.5", "web.3=10.0.1.7"}) {
		t.Fatalf("after the task stopped: %v", got)
	}

	// A container event without the swarm label is not the provider's.
	s.send(t, events.ContainerEventType, "die", "c1", map[string]string{"name": "plain"})
	// A node drained: its tasks are no backends.
	e.node("n1", swarm.NodeStateReady, swarm.NodeAvailabilityDrain)
	s.send(t, events.NodeEventType, "update", "n1", nil)
	call, _ = h.rec.next(t)
	if got := taskNames(call.containers); len(got) != 0 {
		t.Fatalf("tasks on a drained node: %v", got)
	}
}

func TestSwarmProviderReconnectsAndResyncs(t *testing.T) {
	e := newFakeSwarm()
	e.service("s1", "web", 1)
	e.task("t1", "s1", 1, "n1", swarm.TaskStateRunning, "10.0.1.5")
	h := startSwarm(t, e, Options{})
	h.rec.next(t)
	s := h.eng.stream(t)
	wantConnection(t, h.p, h.reg, provider.StateConnected)
	if v := metricValue(t, h.reg, "levee_provider_connected", map[string]string{"provider": "swarm"}); v != 1 {
		t.Fatalf("levee_provider_connected{provider=swarm} = %v", v)
	}

	// The stream breaks; meanwhile the service is scaled. The reconnect
	// re-lists and publishes the new set.
	e.task("t2", "s1", 2, "n1", swarm.TaskStateRunning, "10.0.1.6")
	s.errs <- errors.New("unexpected EOF")
	h.clock.expectTimer(t, DefaultRetryMin)
	h.clock.Advance(DefaultRetryMin)
	h.eng.stream(t)
	call, _ := h.rec.next(t)
	if got := taskNames(call.containers); len(got) != 2 {
		t.Fatalf("after the reconnect: %v", got)
	}
}

func TestSwarmModeNeedsTheSwarmAPI(t *testing.T) {
	if _, err := newProvider(Options{Swarm: true}, newFakeEngine()); err == nil {
		t.Fatal("an engine without the Swarm API was accepted")
	}
}

// A task whose container this node sees stopping (Swarm's SIGTERM at a
// scale-down, a kill) leaves the backends at once, before the manager
// records it, and comes back if it is still running after the settle
// window.
func TestSwarmTaskStoppingLeavesAtOnce(t *testing.T) {
	e := newFakeSwarm()
	e.service("s1", "web", 2)
	e.task("t1", "s1", 1, "n1", swarm.TaskStateRunning, "10.0.1.5")
	e.task("t2", "s1", 2, "n1", swarm.TaskStateRunning, "10.0.1.6")
	h := startSwarm(t, e, Options{})
	h.rec.next(t)
	s := h.eng.stream(t)
	h.clock.expectTimer(t, DefaultSwarmPoll)

	// A SIGHUP is not a stop: no change.
	s.send(t, events.ContainerEventType, "kill", "c2", map[string]string{swarmServiceLabel: "s1", swarmTaskLabel: "t2", "signal": "1"})
	s.send(t, events.ContainerEventType, "kill", "c2", map[string]string{swarmServiceLabel: "s1", swarmTaskLabel: "t2", "signal": "15"})
	// The SIGHUP event re-listed at once and opened the debounce window;
	// the SIGTERM is published at once all the same.
	call, _ := h.rec.next(t)
	if got := taskNames(call.containers); !reflect.DeepEqual(got, []string{"web.1=10.0.1.5"}) {
		t.Fatalf("after SIGTERM to t2 (the manager still says running): %v", got)
	}
	// Still running once the settle window is over: it is back.
	// The clock moves on in poll steps (the provider may still be
	// re-arming its poll timer when a step lands) until a re-list after
	// the window brings t2 back.
	call = advanceUntilUpdate(t, h, DefaultSwarmSettle)
	if h.clock.Now().Sub(time.Unix(1_700_000_000, 0)) <= swarmSettleWindow {
		t.Fatalf("t2 came back before the settle window ended")
	}
	if got := taskNames(call.containers); len(got) != 2 {
		t.Fatalf("after the settle window: %v", got)
	}
}

// advanceUntilUpdate advances the fake clock by step until the provider
// publishes, and returns that parse call.
func advanceUntilUpdate(t *testing.T, h *harness, step time.Duration) parseCall {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		h.clock.Advance(step)
		select {
		case c := <-h.rec.calls:
			<-h.rec.updates
			return c
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("no update within the deadline")
	return parseCall{}
}

func TestLegacyNetworksAreReadFromTheRawService(t *testing.T) {
	raw := []byte(`{"ID":"s1","Spec":{"Name":"old","Networks":[{"Target":"netfront","Aliases":["web"]}]}}`)
	got, err := legacyNetworks(raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := []swarm.NetworkAttachmentConfig{{Target: "netfront", Aliases: []string{"web"}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("networks %+v, want %+v", got, want)
	}
	if _, err := legacyNetworks([]byte(`{"Spec":`)); err == nil {
		t.Fatal("a truncated answer gave no error")
	}
}

// A labelled service that never reaches its replica count is polled at
// the settle period for a minute, then at the poll period.
func TestSwarmUnsettledPollingIsBounded(t *testing.T) {
	e := newFakeSwarm()
	e.service("s1", "web", 3) // wants 3, will never run more than 1
	e.task("t1", "s1", 1, "n1", swarm.TaskStateRunning, "10.0.1.5")
	h := startSwarm(t, e, Options{})
	h.rec.next(t)
	h.eng.stream(t)
	h.clock.expectTimer(t, DefaultSwarmSettle)
	for elapsed := time.Duration(0); elapsed < swarmUnsettledMax; elapsed += DefaultSwarmSettle {
		h.clock.Advance(DefaultSwarmSettle)
		if elapsed+DefaultSwarmSettle < swarmUnsettledMax {
			h.clock.expectTimer(t, DefaultSwarmSettle)
		}
	}
	h.clock.expectTimer(t, DefaultSwarmPoll)
}

// A task's node address and host-mode TCP ports reach labels.Task: the
// node's own address, else (unspecified, as a manager may report it) the
// host of its manager address; ingress-mode and UDP ports are not the
// task's way in.
func TestSwarmFactsNodeAddressAndHostPorts(t *testing.T) {
	ready := swarm.NodeStatus{State: swarm.NodeStateReady}
	node := func(id, addr, managerAddr string) swarm.Node {
		n := swarm.Node{ID: id, Spec: swarm.NodeSpec{Availability: swarm.NodeAvailabilityActive}, Status: ready}
		n.Status.Addr = addr
		if managerAddr != "" {
			n.ManagerStatus = &swarm.ManagerStatus{Addr: managerAddr}
		}
		return n
	}
	host := func(target, published uint32) swarm.PortConfig {
		return swarm.PortConfig{Protocol: network.TCP, TargetPort: target, PublishedPort: published, PublishMode: swarm.PortConfigPublishModeHost}
	}
	cases := []struct {
		name      string
		node      swarm.Node
		ports     []swarm.PortConfig
		nodeAddr  string
		hostPorts map[int]int
	}{
		{"worker address, one host port", node("n", "192.168.1.7", ""), []swarm.PortConfig{host(8080, 30001)},
			"192.168.1.7", map[int]int{8080: 30001}},
		{"manager at 0.0.0.0: its manager address", node("n", "0.0.0.0", "10.0.0.5:2377"), []swarm.PortConfig{host(8080, 30001)},
			"10.0.0.5", map[int]int{8080: 30001}},
		{"no address: the manager address", node("n", "", "127.0.0.1:2377"), nil,
			"127.0.0.1", nil},
		{"IPv6 manager address", node("n", "::", "[fd00::5]:2377"), nil,
			"fd00::5", nil},
		{"0.0.0.0 and no manager status: unknown", node("n", "0.0.0.0", ""), []swarm.PortConfig{host(8080, 30001)},
			"", map[int]int{8080: 30001}},
		{"ingress and UDP ports ignored", node("n", "192.168.1.7", ""), []swarm.PortConfig{
			{Protocol: network.TCP, TargetPort: 8080, PublishedPort: 30080, PublishMode: swarm.PortConfigPublishModeIngress},
			{Protocol: network.UDP, TargetPort: 53, PublishedPort: 30053, PublishMode: swarm.PortConfigPublishModeHost},
			{TargetPort: 9090, PublishedPort: 30090, PublishMode: swarm.PortConfigPublishModeHost}, // protocol unset: TCP
		}, "192.168.1.7", map[int]int{9090: 30090}},
		{"two published ports for one target: neither (ambiguous)", node("n", "192.168.1.7", ""), []swarm.PortConfig{host(8080, 30002), host(8080, 30001)},
			"192.168.1.7", nil},
		{"not yet published: ignored", node("n", "192.168.1.7", ""), []swarm.PortConfig{host(8080, 0)},
			"192.168.1.7", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := swarm.Service{ID: "s1"}
			s.Spec.Name = "web"
			tk := swarm.Task{ID: "t1", ServiceID: "s1", Slot: 1, NodeID: "n", DesiredState: swarm.TaskStateRunning}
			tk.Status.State = swarm.TaskStateRunning
			tk.Status.PortStatus.Ports = tc.ports
			cache, _ := swarmFacts(swarmState{services: []swarm.Service{s}, tasks: []swarm.Task{tk}, nodes: []swarm.Node{tc.node}}, "levee")
			tasks := cache["s1"].Tasks
			if len(tasks) != 1 {
				t.Fatalf("tasks %+v", tasks)
			}
			if tasks[0].NodeAddr != tc.nodeAddr || !reflect.DeepEqual(tasks[0].HostPorts, tc.hostPorts) {
				t.Fatalf("node address %q, host ports %v; want %q, %v", tasks[0].NodeAddr, tasks[0].HostPorts, tc.nodeAddr, tc.hostPorts)
			}
		})
	}
}
