package docker

import (
	"context"

	"github.com/levee-proxy/levee/provider/labels"
)

// ListHostContainers lists the routable containers of one host's engine
// once, with the host's TLS client certificates, ordered by name, for
// `levee validate`. Each engine call has DefaultCallTimeout.
func ListHostContainers(ctx context.Context, spec HostSpec) ([]labels.Container, error) {
	cli, err := newClient(spec.URL, spec.TLSDir)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	everything := func(map[string]string) bool { return true }
	cache, err := listFacts(ctx, mobyEngine{cli}, DefaultCallTimeout, everything)
	if err != nil {
		return nil, err
	}
	return sortedFacts(cache), nil
}

// JoinHosts tags each host's containers (lists[i] of specs[i]) as the
// provider of several hosts does before it parses their union: each names
// its host, and a remote host's containers are reached at the host's
// address and their published ports. Levee's own container is not looked
// for (`levee validate` runs outside it), so a host on a socket of this
// machine without an address is local.
func JoinHosts(specs []HostSpec, lists [][]labels.Container) []labels.Container {
	set := &hostSet{byName: map[string]*hostView{}}
	for i, s := range specs {
		set.add(s)
		if i < len(lists) {
			set.byName[s.Name].facts = hostFacts{containers: lists[i]}
		}
	}
	cs, _ := set.join()
	return cs
}
