package labels

import (
	"fmt"
	"slices"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// containerBackend is where member m (a container, not a Swarm service) is
// dialled. A container on a local host, or with one host, is dialled at
// its address on the chosen network (W010 when it has none). A container
// on a remote host (Container.Remote) is dialled at its address on the
// chosen network when Levee's own container is attached to that very
// network (same ID: an overlay spanning the hosts), else at the host's
// address and the port it publishes for the route's port; with neither it
// is not routed (W087, naming the host).
func (p Parser) containerBackend(m, win candidate, keyOf func(string) string) (config.Backend, bool, []diagnostics.Diagnostic) {
	src := p.source(m.c, m.svc)
	if p.Offline {
		port, diags := p.port(m, win, keyOf)
		return config.Backend{Address: m.c.Name, Port: port, Weight: hostWeighted(win.cfg.Weight, m.c.HostWeight), Name: m.c.Name, Host: m.c.Host}, true, diags
	}
	if m.c.Remote && !p.sharesNetwork(m.net) {
		port, diags := p.port(m, win, keyOf)
		if published, ok := m.c.PublishedPorts[port]; ok && m.c.HostAddr != "" {
			return config.Backend{Address: m.c.HostAddr, Port: published, Weight: hostWeighted(win.cfg.Weight, m.c.HostWeight), Name: m.c.Name, Host: m.c.Host}, true, diags
		}
		return config.Backend{}, false, append(diags, unreachableOnHost(src, m, port, keyOf))
	}
	if m.net == nil || m.net.IP == "" {
		netName := "no network"
		if m.net != nil {
			netName = "network " + m.net.Name
		}
		return config.Backend{}, false, []diagnostics.Diagnostic{diagnostics.New(diagnostics.NoAddress, src, "", "", "",
			fmt.Sprintf("container has no IP address on %s: it gets no traffic", netName), "")}
	}
	port, diags := p.port(m, win, keyOf)
	return config.Backend{Address: m.net.IP, Port: port, Weight: hostWeighted(win.cfg.Weight, m.c.HostWeight), Name: m.c.Name, Host: m.c.Host}, true, diags
}

// hostWeighted is a backend's weight on a host of weight host (0: 1):
// their product, at most config.MaxWeight. A weight of 0 stays 0.
func hostWeighted(weight, host int) int {
	if host <= 1 {
		return weight
	}
	return min(weight*host, config.MaxWeight)
}

// sharesNetwork reports whether net is one of Levee's own container's
// networks, by ID: a network of the same name on another host (every
// host has a "bridge") is another network.
func (p Parser) sharesNetwork(net *Network) bool {
	return net != nil && net.IP != "" && net.ID != "" && slices.Contains(p.OwnNetworkIDs, net.ID)
}

// unreachableOnHost is the W087 of a remote host's container that neither
// publishes port nor shares a network with Levee.
func unreachableOnHost(src diagnostics.Source, m candidate, port int, keyOf func(string) string) diagnostics.Diagnostic {
	where := "publishes no port for it"
	if len(m.c.PublishedPorts) > 0 && m.c.HostAddr == "" {
		where = "publishes it, but the host's address is not known (its engine is reached on a unix socket)"
	}
	return diagnostics.New(diagnostics.DockerHostUnreachable, src, keyOf("port"), m.c.Labels[keyOf("port")], "",
		fmt.Sprintf("container %s on Docker host %s is not reachable: the route's port is %d, the container %s, and it shares no network with Levee: it gets no traffic",
			m.c.Name, m.c.Host, port, where),
		fmt.Sprintf("publish port %d (ports: - \"%d:%d\"), or attach the container and Levee to one network spanning the hosts", port, port, port))
}
