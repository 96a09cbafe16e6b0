package diagnostics

// Codes of the Swarm provider (docs/swarm.md).
const (
	// SwarmNoSharedNetwork: Levee runs in a container and shares no network
	// with a labelled service, so it cannot reach the service's tasks.
	SwarmNoSharedNetwork Code = "W070"
	// SwarmNoVirtualIP: lb.swarm=true on a service without a virtual IP on
	// the chosen network (endpoint mode dnsrr).
	SwarmNoVirtualIP Code = "W071"
	// SwarmOnlyField: lb.swarm on a container, which has no virtual IP.
	SwarmOnlyField Code = "W072"
	// SwarmUnreachableFromHost: Levee runs outside any container and a
	// service's tasks publish the route's port in no host-mode port, so it
	// can only dial their overlay addresses, which the host cannot reach.
	SwarmUnreachableFromHost Code = "W073"
)

// swarmEntries are the codes of the Swarm provider (codes 070-074); their Code constants are declared here too.
func swarmEntries() []Entry {
	return []Entry{
		{
			Code: SwarmNoSharedNetwork, Severity: Warn, Title: "Levee shares no network with the Swarm service",
			Effect:  "Levee still dials the service's tasks on the network it would choose (the network label, else the first by name), which it most likely cannot reach: requests to the route fail with 502 or 503.",
			Fix:     "Attach Levee and the service to one overlay network (created with `--attachable` when Levee runs as a plain container), and name it with `<prefix>.network` if the service has several.",
			Example: "deploy.labels: levee.http.web.host=web.example.com   # service on net-a, Levee on net-b",
		},
		{
			Code: SwarmNoVirtualIP, Severity: Warn, Title: "lb.swarm=true but the service has no virtual IP",
			Effect:  "The service is routed to its running tasks, as without lb.swarm, with Levee's own balancing and health checks.",
			Fix:     "Deploy the service with `endpoint_mode: vip` (the default) on the network Levee uses, or remove `lb.swarm`.",
			Example: "levee.http.web.lb.swarm=true   # service deployed with endpoint_mode: dnsrr",
		},
		{
			Code: SwarmOnlyField, Severity: Warn, Title: "Swarm-only field on a container",
			Effect:  "The field is ignored: only a Swarm service has a virtual IP; the container is routed as usual.",
			Fix:     "Remove `lb.swarm` from the container's labels, or put the labels under `deploy.labels` of a service deployed with `docker stack deploy`.",
			Example: "labels: levee.http.web.lb.swarm=true   # under labels:, not deploy.labels:",
		},
		{
			Code: SwarmUnreachableFromHost, Severity: Warn, Title: "Levee on the host cannot reach the Swarm service's tasks",
			Effect:  "Levee, running outside any container, still dials the tasks that do not publish the route's port in host mode at their address on the chosen overlay network, which the host most likely cannot reach: requests to them fail (502 or 503) and passive health ejects them. Tasks that do publish it in host mode are dialled at their node's address and published port.",
			Fix:     "Publish the route's port in host mode (stack file `ports: - {target: 8080, mode: host}`, or `docker service create --publish mode=host,target=8080`), or run Levee in a container on the service's network (see docs/swarm.md).",
			Example: "deploy.labels: levee.http.web.port=8080   # service publishes no port, Levee runs as a host process",
		},
	}
}
