package main

import (
	"context"
	"fmt"

	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
)

// readEngines reads what `levee validate` checks of the live engines, as
// levee serve would watch them with the same --docker-host values. No host,
// or one host named local without an address, is the single engine: its
// containers, and its Swarm services when it is a manager. Several hosts
// are read each with its own TLS certificates and joined as serve joins
// them (docker.JoinHosts): each container names its host, remote hosts'
// containers are dialled at the host's address and published ports, and
// replicas of one service on several hosts form one route. Swarm watches
// one engine, so several hosts have no services. A host that cannot be
// read is an error naming it: a check of part of the hosts would pass
// routes that serve merges differently.
func readEngines(ctx context.Context, eng engineReader, hosts []docker.HostSpec) (containers, services []labels.Container, err error) {
	if len(hosts) > 1 || len(hosts) == 1 && (hosts[0].Name != docker.LocalHostName || hosts[0].Addr != "") {
		return readHosts(ctx, eng, hosts)
	}
	var spec docker.HostSpec
	if len(hosts) == 1 {
		spec = hosts[0]
	}
	if containers, err = eng.listContainers(ctx, spec); err != nil {
		return nil, nil, fmt.Errorf("read the live Docker engine: %w", err)
	}
	if eng.listServices != nil {
		// On a Swarm manager the services' labels are checked too, as
		// `levee serve --swarm` reads them.
		if services, err = eng.listServices(ctx, spec); err != nil {
			return nil, nil, fmt.Errorf("read the live engine's Swarm services: %w", err)
		}
	}
	return containers, services, nil
}

// readHosts lists every host's containers and joins them.
func readHosts(ctx context.Context, eng engineReader, hosts []docker.HostSpec) ([]labels.Container, []labels.Container, error) {
	lists := make([][]labels.Container, len(hosts))
	for i, h := range hosts {
		cs, err := eng.listContainers(ctx, h)
		if err != nil {
			return nil, nil, fmt.Errorf("read Docker host %s (%s): %w", h.Name, h.URL, err)
		}
		lists[i] = cs
	}
	return docker.JoinHosts(hosts, lists), nil, nil
}
