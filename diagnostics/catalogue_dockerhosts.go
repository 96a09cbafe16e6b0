package diagnostics

// Codes of several Docker hosts watched by one Levee (docs/docker-hosts.md).
const (
	// DockerHostLost: the connection to one Docker host was judged lost;
	// its containers are taken out of the routes until it resyncs.
	DockerHostLost Code = "W086"
	// DockerHostUnreachable: a container on a remote Docker host publishes
	// no port for its route's port and shares no network with Levee.
	DockerHostUnreachable Code = "W087"
)

// dockerHostsEntries are the codes of several Docker hosts.
func dockerHostsEntries() []Entry {
	return []Entry{
		{
			Code: DockerHostLost, Severity: Warn, Title: "Docker host lost",
			Effect:  "The host's containers keep their routes while the connection is only being re-opened; once a reconnect attempt fails as well, they are taken out of every route (they would fail anyway), and replicas on the other hosts keep serving. A route left with no backend answers 503 `no-healthy-backend`. They come back with the host's next full sync.",
			Fix:     "Bring the engine back, or fix the network or TLS path to it; `/ready` shows the host's connection and last error.",
			Example: "levee serve --docker-host local=unix:///var/run/docker.sock --docker-host edge2=tcp://10.0.0.2:2376   # edge2's dockerd stopped",
		},
		{
			Code: DockerHostUnreachable, Severity: Warn, Title: "container on a remote Docker host not reachable",
			Effect:  "The container gets no traffic: Levee dials a remote host's container at the host's address and the port it publishes for the route's port, or at its own address on a network Levee's container is attached to (same network ID); it has neither. Its replicas elsewhere are routed.",
			Fix:     "Publish the route's port (`ports: - \"8080:80\"` for port 80), or attach the container and Levee to one network that spans both hosts (an attachable overlay) and name it with `levee.network`.",
			Example: "levee.http.web.port=80   # on edge2, with no ports: entry",
		},
	}
}
