package labels

import "time"

// Container is what the label grammar needs to know about one container. The
// Docker provider fills it from list+inspect; `levee validate` fills it from a
// compose file (no networks, no addresses: Offline).
type Container struct {
	ID      string
	Name    string // without the leading slash
	Created time.Time
	Labels  map[string]string
	// Networks the container is attached to, with its IP on each.
	Networks []Network
	// ExposedPorts are the container's exposed TCP ports (image EXPOSE and
	// --expose), ascending.
	ExposedPorts []int
	// HasHealthcheck is true when the container defines a HEALTHCHECK;
	// Health is then "starting", "healthy" or "unhealthy".
	HasHealthcheck bool
	Health         string
}

// Network is one network a container is attached to.
type Network struct {
	Name string
	IP   string
}
