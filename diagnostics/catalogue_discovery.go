package diagnostics

// Codes of discovery: how the Docker provider and its Swarm mode find the
// way to a backend (codes 090-094).
const (
	// SwarmHostPortAmbiguous: Levee runs outside any container and a task
	// reports several different published ports for the route's port (one
	// per address family) on a node whose containers this engine cannot
	// inspect, so it cannot tell which one its node address reaches.
	SwarmHostPortAmbiguous Code = "W090"
	// NoSharedNetwork: Levee runs in a container and shares no network
	// with a labelled container, so it cannot reach it.
	NoSharedNetwork Code = "W091"
)

// discoveryEntries are the codes of discovery (090-094).
func discoveryEntries() []Entry {
	return []Entry{
		{
			Code: SwarmHostPortAmbiguous, Severity: Warn, Title: "Swarm task's host-mode port is ambiguous",
			Effect:  "The task is not dialled: it publishes the route's port on two different host ports (the engine allocates one for 0.0.0.0 and one for [::] independently) and runs on another node, whose containers this engine cannot inspect, so the task's status does not say which port the node's address reaches; a guess could reach another task, even of another service. The service's other tasks are routed; tasks on the node Levee asks are read from their containers and never ambiguous.",
			Fix:     "Publish a fixed port in host mode (`ports: - {target: 8080, published: 8080, mode: host}`: one task per node, the same number for both families), point Levee at an engine on each node, or run Levee in a container on the service's overlay network (see docs/swarm.md).",
			Example: "task web.2 on node worker-1 publishes 8080 as 32771 and 32772",
		},
		{
			Code: NoSharedNetwork, Severity: Warn, Title: "Levee shares no network with the container",
			Effect:  "Levee still dials the container on the network it would choose (the network label, else the first by name), which it most likely cannot reach: connections time out or are refused, requests to the route fail with 502 or 504 and passive health ejects the container.",
			Fix:     "Attach Levee and the container to one network (compose `networks:`, or `docker network connect NET levee`), and name it with `<prefix>.network` if the container has several.",
			Example: "labels: levee.http.web.host=web.example.com   # container on project-a_default, Levee on project-b_default",
		},
	}
}
