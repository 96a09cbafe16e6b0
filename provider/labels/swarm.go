package labels

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// SwarmLBField is the service field that routes a Swarm service through its
// virtual IP instead of its tasks: <prefix>.http.<service>.lb.swarm=true.
// It is the provider's choice of backends, not a route setting, so it is
// read here and not by the config model.
const SwarmLBField = "lb.swarm"

// swarmLB takes lb.swarm out of a service's fields and reports whether the
// virtual IP is asked for. On a container it is ignored (W072); a value
// that is not a boolean falls back to false (W028).
func (p Parser) swarmLB(c *Container, fields map[string]string, src diagnostics.Source, keyOf func(string) string) (map[string]string, bool, []diagnostics.Diagnostic) {
	name, raw, ok := labelFold(fields, SwarmLBField)
	if !ok {
		return fields, false, nil
	}
	rest := make(map[string]string, len(fields)-1)
	for k, v := range fields {
		if k != name {
			rest[k] = v
		}
	}
	key := keyOf(name)
	if !c.Service {
		return rest, false, []diagnostics.Diagnostic{diagnostics.New(diagnostics.SwarmOnlyField, src, key, raw, "",
			"lb.swarm applies to Swarm services only (a container has no virtual IP): ignored", "")}
	}
	b, err := config.ParseBool(raw)
	if err != nil {
		return rest, false, []diagnostics.Diagnostic{diagnostics.New(diagnostics.BadBool, src, key, raw, "false",
			"invalid boolean: want true/false, 1/0, yes/no or on/off", "")}
	}
	return rest, b, nil
}

// noSharedNetwork reports a container (W091) or a service (W070) with
// which Levee's own container shares no network: Levee most likely cannot
// reach it. Levee outside a container (no OwnNetworks) cannot tell, and
// says nothing; nor does a Levee on the host's network (network_mode:
// host), which reaches the bridges' addresses from the host.
func (p Parser) noSharedNetwork(prefix string, c *Container, nets []Network) []diagnostics.Diagnostic {
	if len(p.OwnNetworks) == 0 || slices.Contains(p.OwnNetworks, "host") {
		return nil
	}
	names := make([]string, len(nets))
	for i, n := range nets {
		names[i] = n.Name
		for _, own := range p.OwnNetworks {
			if n.Name == own {
				return nil
			}
		}
	}
	key, value, _ := labelFold(c.Labels, prefix+".network")
	code, kind, effect := diagnostics.NoSharedNetwork, "container", "it is not reachable: connections to it time out or are refused"
	if c.Service {
		code, kind, effect = diagnostics.SwarmNoSharedNetwork, "service", "its tasks are not reachable"
	}
	return []diagnostics.Diagnostic{diagnostics.New(code, p.source(c, ""), key, value, "",
		fmt.Sprintf("Levee shares no network with %s %s (%s: %s; Levee: %s): %s",
			kind, c.Name, kind, orNone(names), strings.Join(p.OwnNetworks, ", "), effect),
		"attach Levee and the "+kind+" to one network, and name it with "+prefix+".network if there are several")}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// serviceBackends are the backends of a Swarm service: its virtual IP on
// the chosen network when lb.swarm=true (and some task runs, so that a
// service scaled to 0 answers 503 rather than a dial error), else its
// running tasks (taskBackends).
func (p Parser) serviceBackends(m, win candidate, keyOf func(string) string) ([]config.Backend, []diagnostics.Diagnostic) {
	port, diags := p.port(m, win, keyOf)
	src := p.source(m.c, m.svc)
	if p.Offline {
		return []config.Backend{{Address: m.c.Name, Port: port, Weight: win.cfg.Weight, Name: m.c.Name}}, diags
	}
	onHost := p.onHost()
	if m.net == nil && !onHost {
		// On the host, a task may still be reached through a port it
		// publishes in host mode.
		return nil, append(diags, diagnostics.New(diagnostics.NoAddress, src, "", "", "",
			"service is attached to no network: it gets no traffic", ""))
	}
	if m.vip {
		if m.net != nil && m.net.IP != "" {
			if len(m.c.Tasks) == 0 {
				return nil, diags
			}
			return []config.Backend{{Address: m.net.IP, Port: port, Weight: win.cfg.Weight, Name: m.c.Name}}, diags
		}
		diags = append(diags, diagnostics.New(diagnostics.SwarmNoVirtualIP, src, keyOf(SwarmLBField), "true", "the service's tasks",
			fmt.Sprintf("service %s has no virtual IP on %s: routed to its tasks", m.c.Name, onNetwork(m.net)), ""))
	}
	bs, ds := p.taskBackends(m, port, win.cfg.Weight, keyOf, onHost)
	return bs, append(diags, ds...)
}

// onHost reports whether Levee runs outside any container: then overlay
// addresses are not reachable (they live in the swarm's network
// namespaces, not the host's), and a task's host-mode port is.
func (p Parser) onHost() bool {
	return p.OnHost && len(p.OwnNetworks) == 0 && !p.Offline
}

// taskBackends are a service's running tasks, each by its own rule. Levee
// on the host dials a task that publishes port in host mode at its node's
// address and the published port. Otherwise a task is dialled at its
// address on the chosen network; a Levee on the host most likely cannot
// reach it there, and says so once for the service (W073). A task without
// an address gets W010.
func (p Parser) taskBackends(m candidate, port, weight int, keyOf func(string) string, onHost bool) ([]config.Backend, []diagnostics.Diagnostic) {
	src := p.source(m.c, m.svc)
	var out []config.Backend
	var diags []diagnostics.Diagnostic
	var overlay []string // tasks a Levee on the host dials on the overlay
	for _, t := range m.c.Tasks {
		if onHost {
			if addr, published, ok := t.hostPort(port); ok {
				out = append(out, config.Backend{Address: addr, Port: published, Weight: weight, Name: t.Name})
				continue
			}
			if ps, ok := t.AmbiguousPorts[port]; ok {
				diags = append(diags, ambiguousHostPort(src, m, t, port, ps, keyOf))
				continue
			}
		}
		ip := taskIP(t, m.net)
		if ip == "" {
			hint := ""
			if onHost {
				hint = fmt.Sprintf("Levee runs outside a container: publish port %d in host mode", port)
			}
			diags = append(diags, diagnostics.New(diagnostics.NoAddress, src, "", "", "",
				fmt.Sprintf("task %s has no IP address on %s: it gets no traffic", t.Name, onNetwork(m.net)), hint))
			continue
		}
		if onHost {
			overlay = append(overlay, t.Name)
		}
		out = append(out, config.Backend{Address: ip, Port: port, Weight: weight, Name: t.Name})
	}
	if len(overlay) > 0 {
		diags = append(diags, unreachableFromHost(src, m, port, overlay, keyOf))
	}
	return out, diags
}

// taskIP is task t's address on network net ("" when it has none).
func taskIP(t Task, net *Network) string {
	if net == nil {
		return ""
	}
	for _, n := range t.Networks {
		if n.Name == net.Name {
			return n.IP
		}
	}
	return ""
}

// unreachableFromHost is the one W073 of a service whose tasks named in
// tasks are dialled on the overlay by a Levee outside any container. It is
// keyed by the route's port, the port those tasks should publish.
func unreachableFromHost(src diagnostics.Source, m candidate, port int, tasks []string, keyOf func(string) string) diagnostics.Diagnostic {
	subject := "task " + tasks[0] + " publishes"
	if len(tasks) > 1 {
		subject = "tasks " + taskList(tasks) + " publish"
	}
	return diagnostics.New(diagnostics.SwarmUnreachableFromHost, src, keyOf("port"), m.c.Labels[keyOf("port")],
		"the tasks' addresses on "+onNetwork(m.net),
		fmt.Sprintf("Levee runs outside a container and %s no port %d in host mode: the task addresses on %s are not reachable from the host",
			subject, port, onNetwork(m.net)),
		fmt.Sprintf("publish port %d in host mode (ports: - {target: %d, mode: host}), or run Levee in a container on %s", port, port, onNetwork(m.net)))
}

// ambiguousHostPort is the W090 of task t, which publishes port on the
// several host ports ps: Levee on the host does not dial it.
func ambiguousHostPort(src diagnostics.Source, m candidate, t Task, port int, ps []int, keyOf func(string) string) diagnostics.Diagnostic {
	nums := make([]string, len(ps))
	for i, p := range ps {
		nums[i] = strconv.Itoa(p)
	}
	return diagnostics.New(diagnostics.SwarmHostPortAmbiguous, src, keyOf("port"), m.c.Labels[keyOf("port")], "",
		fmt.Sprintf("task %s publishes port %d on host ports %s (one per address family) on a node whose containers this engine cannot inspect: which one %s reaches is unknown, so the task gets no traffic",
			t.Name, port, strings.Join(nums, " and "), t.NodeAddr),
		fmt.Sprintf("publish a fixed port in host mode (ports: - {target: %d, published: %d, mode: host}), or run Levee in a container on the service's network", port, port))
}

// maxNamedTasks bounds the task names in one message: a service of a
// hundred replicas gets a readable line, and the count says the rest.
const maxNamedTasks = 5

// taskList names tasks, the first maxNamedTasks of them and how many more.
func taskList(tasks []string) string {
	if len(tasks) <= maxNamedTasks {
		return strings.Join(tasks, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(tasks[:maxNamedTasks], ", "), len(tasks)-maxNamedTasks)
}

// onNetwork names network n in a message.
func onNetwork(n *Network) string {
	if n == nil {
		return "any network"
	}
	return "network " + n.Name
}
