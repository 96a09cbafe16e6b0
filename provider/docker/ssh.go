package docker

import (
	"net/url"
	"os"

	"github.com/docker/cli/cli/connhelper"
	"github.com/moby/moby/client"
)

// sshOpts are the client options of an ssh://[user@]host[:port][/socket]
// engine address (host, else DOCKER_HOST), none for any other. As the
// Docker CLI does, each connection runs the local ssh binary, which runs
// `docker system dial-stdio` on the remote host and carries the Engine API
// over its standard input and output: ssh's own configuration, keys and
// agent apply (~/.ssh/config, known_hosts), and the remote user needs the
// docker CLI and access to the engine's socket.
func sshOpts(host string) ([]client.Opt, error) {
	if host == "" {
		host = os.Getenv("DOCKER_HOST")
	}
	if u, err := url.Parse(host); err != nil || u.Scheme != "ssh" {
		return nil, nil
	}
	helper, err := connhelper.GetConnectionHelper(host)
	if err != nil {
		return nil, err
	}
	// The host names the HTTP requests' URL; the dialer then replaces the
	// transport's, which WithHost configures.
	return []client.Opt{client.WithHost(helper.Host), client.WithDialContext(helper.Dialer)}, nil
}
