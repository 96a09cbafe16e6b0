package docker

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// LocalHostName is the name of a Docker host given without one
// (--docker-host unix:///var/run/docker.sock).
const LocalHostName = "local"

// HostSpec is one Docker host of several: its name (in metrics, /ready,
// backends and diagnostics), its engine address, and the directory of its
// TLS client certificates in the Docker CLI's DOCKER_CERT_PATH layout
// (ca.pem, cert.pem, key.pem), empty for none.
type HostSpec struct {
	Name   string
	URL    string
	TLSDir string
	// Addr, when set, is where the host's published ports are dialled,
	// and makes the host remote (unless Levee's own container runs on
	// it): an engine reached through a forwarded socket. Empty means the
	// host of URL.
	Addr string
	// Weight multiplies the weight of each of the host's backends
	// (--docker-host-weight): replicas on a host of weight 3 take three
	// times the traffic of those on a host of weight 1. 0 means 1.
	Weight int
}

// MaxHostWeight bounds --docker-host-weight.
const MaxHostWeight = 100

// tlsFiles are the files of a TLS directory, as the Docker CLI names them.
var tlsFiles = []string{"ca.pem", "cert.pem", "key.pem"}

// ParseHostSpec parses one --docker-host value: "name=url", or "url" for
// the host named LocalHostName. The URL's scheme is unix, tcp, http,
// https or ssh (through the local ssh binary, as the Docker CLI: ssh.go).
func ParseHostSpec(v string) (HostSpec, error) {
	v = strings.TrimSpace(v)
	name, addr := LocalHostName, v
	if i := strings.Index(v, "="); i >= 0 && !strings.Contains(v[:i], "://") {
		name, addr = v[:i], v[i+1:]
		if !validHostName(name) {
			return HostSpec{}, fmt.Errorf("docker host %q: the name %q must be 1-63 lower-case letters, digits, '-' and '_'", v, name)
		}
	}
	if err := checkHostURL(addr); err != nil {
		return HostSpec{}, fmt.Errorf("docker host %q: %w", v, err)
	}
	return HostSpec{Name: name, URL: addr}, nil
}

func validHostName(s string) bool {
	if s == "" || len(s) > 63 {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_' {
			return false
		}
	}
	return true
}

// checkHostURL refuses an engine address the client cannot use.
func checkHostURL(addr string) error {
	u, err := url.Parse(addr)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	switch u.Scheme {
	case "unix", "npipe":
		if u.Path == "" {
			return fmt.Errorf("%s:// needs the socket's path, e.g. unix:///var/run/docker.sock", u.Scheme)
		}
	case "tcp", "http", "https":
		if u.Hostname() == "" {
			return fmt.Errorf("%s:// needs a host, e.g. tcp://10.0.0.2:2376", u.Scheme)
		}
	case "ssh":
		if u.Hostname() == "" {
			return errors.New("ssh:// needs a host, e.g. ssh://admin@10.0.0.2")
		}
	case "":
		return errors.New("no scheme: want unix://, tcp://, http://, https:// or ssh://")
	default:
		return fmt.Errorf("unknown scheme %q: want unix://, tcp://, http://, https:// or ssh://", u.Scheme)
	}
	return nil
}

// ParseTLSDir parses one --docker-tls-dir value, "name=dir", or "dir" for
// the host named LocalHostName. The directory must hold ca.pem, cert.pem
// and key.pem.
func ParseTLSDir(v string) (name, dir string, err error) {
	name, dir = LocalHostName, strings.TrimSpace(v)
	if n, d, ok := strings.Cut(dir, "="); ok {
		name, dir = n, d
	}
	if !validHostName(name) || dir == "" {
		return "", "", fmt.Errorf("docker TLS directory %q: want name=dir, the name of a --docker-host", v)
	}
	for _, f := range tlsFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return "", "", fmt.Errorf("docker TLS directory %q of host %s: %w", dir, name, err)
		}
	}
	return name, dir, nil
}

// ParseHostAddr parses one --docker-host-address value, "name=addr": an
// IP address or a host name, without a port.
func ParseHostAddr(v string) (name, addr string, err error) {
	name, addr, ok := strings.Cut(strings.TrimSpace(v), "=")
	if !ok || !validHostName(name) || addr == "" || strings.ContainsAny(addr, "/ ") || (strings.Contains(addr, ":") && net.ParseIP(addr) == nil) {
		return "", "", fmt.Errorf("docker host address %q: want name=addr, an IP address or host name without a port, the name of a --docker-host", v)
	}
	return name, addr, nil
}

// ResolveHosts joins the --docker-host, --docker-tls-dir and
// --docker-host-address values into the hosts to watch, in the order
// given. A name given twice, or a TLS directory or address naming no host,
// is an error.
func ResolveHosts(hosts []HostSpec, tlsDirs, addrs map[string]string) ([]HostSpec, error) {
	seen := map[string]bool{}
	out := make([]HostSpec, 0, len(hosts))
	for _, h := range hosts {
		if seen[h.Name] {
			return nil, fmt.Errorf("docker host %s is given twice: name each --docker-host (name=url)", h.Name)
		}
		seen[h.Name] = true
		h.TLSDir, h.Addr = tlsDirs[h.Name], addrs[h.Name]
		out = append(out, h)
	}
	for flag, m := range map[string]map[string]string{"--docker-tls-dir": tlsDirs, "--docker-host-address": addrs} {
		for name := range m {
			if !seen[name] {
				return nil, fmt.Errorf("%s names host %s, which no --docker-host names", flag, name)
			}
		}
	}
	return out, nil
}

// ParseHostWeight parses one --docker-host-weight value, "name=weight":
// a whole number from 1 to MaxHostWeight.
func ParseHostWeight(v string) (name string, weight int, err error) {
	name, w, ok := strings.Cut(strings.TrimSpace(v), "=")
	if !ok || !validHostName(name) {
		return "", 0, fmt.Errorf("docker host weight %q: want name=weight, the name of a --docker-host and a whole number from 1 to %d, e.g. edge2=3", v, MaxHostWeight)
	}
	weight, err = strconv.Atoi(strings.TrimSpace(w))
	if err != nil || weight < 1 || weight > MaxHostWeight {
		return "", 0, fmt.Errorf("docker host weight %q: the weight of host %s must be a whole number from 1 to %d", v, name, MaxHostWeight)
	}
	return name, weight, nil
}

// ApplyHostWeights sets each host's Weight from weights (by name); a
// weight naming no host is an error.
func ApplyHostWeights(hosts []HostSpec, weights map[string]int) ([]HostSpec, error) {
	out := append([]HostSpec(nil), hosts...)
	for name, w := range weights {
		i := slices.IndexFunc(out, func(h HostSpec) bool { return h.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("--docker-host-weight names host %s, which no --docker-host names", name)
		}
		out[i].Weight = w
	}
	return out, nil
}

// hostAddress is where a host's published ports listen: the host part of
// a tcp, http, https or ssh engine address; "" for a socket.
func hostAddress(addr string) string {
	u, err := url.Parse(addr)
	if err != nil || u.Scheme == "unix" || u.Scheme == "npipe" {
		return ""
	}
	h := u.Hostname()
	if ip := net.ParseIP(h); ip != nil {
		return ip.String()
	}
	return h
}

// isSocket reports whether addr is an engine on this machine's socket.
func isSocket(addr string) bool {
	return strings.HasPrefix(addr, "unix://") || strings.HasPrefix(addr, "npipe://")
}
