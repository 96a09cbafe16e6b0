package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/levee-proxy/levee/provider/docker"
)

// dockerHostFlag is --docker-host: repeatable, name=url or url (the host
// named local); LEVEE_DOCKER_HOST separates several with commas.
type dockerHostFlag struct{ specs *[]docker.HostSpec }

func (f dockerHostFlag) String() string {
	if f.specs == nil {
		return ""
	}
	items := make([]string, 0, len(*f.specs))
	for _, s := range *f.specs {
		items = append(items, s.Name+"="+s.URL)
	}
	return strings.Join(items, ",")
}

func (f dockerHostFlag) Set(v string) error {
	items := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
	if len(items) == 0 {
		return errors.New("want [name=]url, e.g. edge2=tcp://10.0.0.2:2376")
	}
	for _, item := range items {
		s, err := docker.ParseHostSpec(item)
		if err != nil {
			return err
		}
		*f.specs = append(*f.specs, s)
	}
	return nil
}

// dockerTLSDirFlag is --docker-tls-dir: repeatable, name=dir or dir (the
// host named local); LEVEE_DOCKER_TLS_DIR separates several with commas.
type dockerTLSDirFlag struct{ dirs *map[string]string }

func (f dockerTLSDirFlag) String() string {
	if f.dirs == nil {
		return ""
	}
	var items []string
	for name, dir := range *f.dirs {
		items = append(items, name+"="+dir)
	}
	return strings.Join(items, ",")
}

func (f dockerTLSDirFlag) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		name, dir, err := docker.ParseTLSDir(item)
		if err != nil {
			return err
		}
		if *f.dirs == nil {
			*f.dirs = map[string]string{}
		}
		if _, dup := (*f.dirs)[name]; dup {
			return fmt.Errorf("--docker-tls-dir for host %s is given twice", name)
		}
		(*f.dirs)[name] = dir
	}
	return nil
}

// dockerHostAddrFlag is --docker-host-address: repeatable, name=addr;
// LEVEE_DOCKER_HOST_ADDRESS separates several with commas.
type dockerHostAddrFlag struct{ addrs *map[string]string }

func (f dockerHostAddrFlag) String() string {
	if f.addrs == nil {
		return ""
	}
	var items []string
	for name, addr := range *f.addrs {
		items = append(items, name+"="+addr)
	}
	return strings.Join(items, ",")
}

func (f dockerHostAddrFlag) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		name, addr, err := docker.ParseHostAddr(item)
		if err != nil {
			return err
		}
		if *f.addrs == nil {
			*f.addrs = map[string]string{}
		}
		if _, dup := (*f.addrs)[name]; dup {
			return fmt.Errorf("--docker-host-address for host %s is given twice", name)
		}
		(*f.addrs)[name] = addr
	}
	return nil
}

// dockerHostWeightFlag is --docker-host-weight: repeatable, name=weight;
// LEVEE_DOCKER_HOST_WEIGHT separates several with commas.
type dockerHostWeightFlag struct{ weights *map[string]int }

func (f dockerHostWeightFlag) String() string {
	if f.weights == nil {
		return ""
	}
	var items []string
	for name, w := range *f.weights {
		items = append(items, fmt.Sprintf("%s=%d", name, w))
	}
	return strings.Join(items, ",")
}

func (f dockerHostWeightFlag) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		name, w, err := docker.ParseHostWeight(item)
		if err != nil {
			return err
		}
		if *f.weights == nil {
			*f.weights = map[string]int{}
		}
		if _, dup := (*f.weights)[name]; dup {
			return fmt.Errorf("--docker-host-weight for host %s is given twice", name)
		}
		(*f.weights)[name] = w
	}
	return nil
}

// settleDockerHosts resolves the Docker hosts after the flags and the
// environment are read. One host named local (or unnamed), or none, is the
// single-engine provider of DockerHost (DOCKER_HOST when none is given);
// otherwise DockerHosts are watched as several hosts.
func (c *serveConfig) settleDockerHosts(getenv func(string) string) error {
	hosts, err := docker.ResolveHosts(c.DockerHosts, c.DockerTLSDirs, c.DockerHostAddrs)
	if err != nil {
		return err
	}
	if hosts, err = docker.ApplyHostWeights(hosts, c.DockerHostWeights); err != nil {
		return err
	}
	c.DockerHosts = hosts
	switch {
	case len(hosts) == 0:
		c.DockerHost = getenv("DOCKER_HOST")
		c.DockerHosts = nil
	case len(hosts) == 1 && hosts[0].Name == docker.LocalHostName && hosts[0].Addr == "":
		c.DockerHost, c.DockerTLSDir = hosts[0].URL, hosts[0].TLSDir
		c.DockerHosts = nil
	case c.SwarmEnabled:
		return errors.New("--swarm watches one Docker engine: give one --docker-host (unnamed) with it")
	}
	return nil
}
