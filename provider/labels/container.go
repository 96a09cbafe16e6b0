package labels

import "time"

// Container is what the label grammar needs to know about one labelled
// object: a container, or a Swarm service (Service set). The Docker provider
// fills it from list+inspect, its Swarm mode from the service, task and node
// lists; `levee validate` fills it from a compose file (no networks, no
// addresses: Offline).
type Container struct {
	ID      string
	Name    string // without the leading slash
	Created time.Time
	Labels  map[string]string
	// Networks the container is attached to, with its IP on each. For a
	// Swarm service: the service's networks, with its virtual IP on each
	// (empty when it has none, endpoint mode dnsrr).
	Networks []Network
	// ExposedPorts are the container's exposed TCP ports (image EXPOSE and
	// --expose), ascending. For a Swarm service: the target ports of its
	// endpoint spec.
	ExposedPorts []int
	// HasHealthcheck is true when the container defines a HEALTHCHECK;
	// Health is then "starting", "healthy" or "unhealthy".
	HasHealthcheck bool
	Health         string

	// Service marks a Swarm service: the labels are the service's, and its
	// backends are Tasks (one per running task on an available node), or
	// its virtual IP when the service asks for it (lb.swarm=true).
	Service bool
	// Tasks are a service's running tasks, each with its own addresses,
	// ordered by name.
	Tasks []Task

	// Host names the Docker host the container runs on when Levee watches
	// several ("" with one); its backends and diagnostics carry it.
	Host string
	// Remote says Levee cannot dial the container's own addresses on its
	// host's private networks (hosts.go): it is reached at HostAddr and the
	// port it publishes there, or on a network Levee's container shares.
	Remote bool
	// HostAddr is where a remote host's published ports listen: the host
	// of its engine's address ("" when unknown, a unix socket).
	HostAddr string
	// HostWeight multiplies the weight of the container's backend: its
	// host's --docker-host-weight; 0 means 1.
	HostWeight int
	// PublishedPorts are the TCP ports the container publishes on its
	// host: container port → host port (one per container port, the
	// IPv4 binding first).
	PublishedPorts map[int]int
}

// Network is one network a container is attached to.
type Network struct {
	Name string
	IP   string
	// ID is the network's engine ID: a network that spans hosts (an
	// overlay) has the same ID on each, two local networks of one name
	// do not.
	ID string
}

// Task is one running task of a Swarm service: a replica, with its address
// on each network of the service, and the ports it publishes on its node.
type Task struct {
	ID string
	// Name is the task's name as `docker service ps` shows it: the
	// service name and the slot (web.2), or the node for a global service.
	Name     string
	Networks []Network
	// NodeAddr is the address of the task's node, where its host-mode
	// ports listen; empty when the swarm does not know it.
	NodeAddr string
	// HostPorts are the TCP ports the task publishes in host mode on its
	// node for the family of NodeAddr: target port (the container's) →
	// published port (the node's). The provider keeps a port only when it
	// is sure of it (docs/swarm.md, "How host-mode ports are chosen").
	HostPorts map[int]int
	// AmbiguousPorts are the targets for which the task reports several
	// published ports that could not be told apart (one per address
	// family, with different numbers, on a node whose containers this
	// engine cannot inspect): target → the published ports, ascending. A
	// Levee on the host does not dial such a task (W090): a guess may land
	// on another task's port.
	AmbiguousPorts map[int][]int
}

// hostPort is where a Levee outside any container reaches the task's
// container port target: its node's address and the port published there
// in host mode. ok is false when the task publishes no such port or its
// node's address is unknown.
func (t Task) hostPort(target int) (addr string, port int, ok bool) {
	port, ok = t.HostPorts[target]
	if !ok || t.NodeAddr == "" {
		return "", 0, false
	}
	return t.NodeAddr, port, true
}
