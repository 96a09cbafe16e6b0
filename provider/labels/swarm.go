package labels

import (
	"fmt"
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
	raw, ok := fields[SwarmLBField]
	if !ok {
		return fields, false, nil
	}
	rest := make(map[string]string, len(fields)-1)
	for k, v := range fields {
		if k != SwarmLBField {
			rest[k] = v
		}
	}
	key := keyOf(SwarmLBField)
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

// noSharedNetwork reports a service with which Levee's own container
// shares no network (W070). Levee outside a container (no OwnNetworks)
// cannot tell, and says nothing.
func (p Parser) noSharedNetwork(prefix string, c *Container, nets []Network) []diagnostics.Diagnostic {
	if len(p.OwnNetworks) == 0 {
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
	return []diagnostics.Diagnostic{diagnostics.New(diagnostics.SwarmNoSharedNetwork, p.source(c, ""), prefix+".network", c.Labels[prefix+".network"], "",
		fmt.Sprintf("Levee shares no network with service %s (service: %s; Levee: %s): its tasks are not reachable",
			c.Name, orNone(names), strings.Join(p.OwnNetworks, ", ")), "")}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// serviceBackends are the backends of a Swarm service: its virtual IP on
// the chosen network when lb.swarm=true (and some task runs, so that a
// service scaled to zero answers 503 rather than a dial error), else each
// running task at its address on that network.
func (p Parser) serviceBackends(m, win candidate, keyOf func(string) string) ([]config.Backend, []diagnostics.Diagnostic) {
	port, diags := p.port(m, win, keyOf)
	src := p.source(m.c, m.svc)
	if p.Offline {
		return []config.Backend{{Address: m.c.Name, Port: port, Weight: win.cfg.Weight, Name: m.c.Name}}, diags
	}
	if m.net == nil {
		return nil, append(diags, diagnostics.New(diagnostics.NoAddress, src, "", "", "",
			"service is attached to no network: it gets no traffic", ""))
	}
	if m.vip {
		if m.net.IP != "" {
			if len(m.c.Tasks) == 0 {
				return nil, diags
			}
			return []config.Backend{{Address: m.net.IP, Port: port, Weight: win.cfg.Weight, Name: m.c.Name}}, diags
		}
		diags = append(diags, diagnostics.New(diagnostics.SwarmNoVirtualIP, src, keyOf(SwarmLBField), "true", "the service's tasks",
			fmt.Sprintf("service %s has no virtual IP on network %s: routed to its tasks", m.c.Name, m.net.Name), ""))
	}
	var out []config.Backend
	for _, t := range m.c.Tasks {
		ip := ""
		for _, n := range t.Networks {
			if n.Name == m.net.Name {
				ip = n.IP
			}
		}
		if ip == "" {
			diags = append(diags, diagnostics.New(diagnostics.NoAddress, src, "", "", "",
				fmt.Sprintf("task %s has no IP address on network %s: it gets no traffic", t.Name, m.net.Name), ""))
			continue
		}
		out = append(out, config.Backend{Address: ip, Port: port, Weight: win.cfg.Weight, Name: t.Name})
	}
	return out, diags
}
