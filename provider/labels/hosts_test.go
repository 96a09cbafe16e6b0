package labels

import (
	"fmt"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// onHost places c on Docker host name, remote or not, with its engine at
// addr, publishing the container ports of published (port → host port).
func onHost(c Container, name string, remote bool, addr string, published map[int]int) Container {
	c.Host, c.Remote, c.HostAddr, c.PublishedPorts = name, remote, addr, published
	return c
}

func backendList(bs []config.Backend) string {
	var out []string
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%s/%s@%s:%d", b.Host, b.Name, b.Address, b.Port))
	}
	return strings.Join(out, " ")
}

var webLabels = []string{"levee.enable=true", "levee.http.web.host=web.example", "levee.http.web.port=8080"}

func TestRemoteHostAddressSelection(t *testing.T) {
	shared := ctr("3", 2, webLabels...)
	shared.Networks = []Network{{Name: "overlay1", IP: "10.9.0.3", ID: "ov1"}}
	sameName := ctr("4", 3, webLabels...)
	sameName.Networks = []Network{{Name: "bridge", IP: "172.17.0.4", ID: "edge3-bridge"}}
	cs := []Container{
		// local: its own address, as with one host.
		onHost(ctr("1", 0, webLabels...), "local", false, "", nil),
		// remote, publishing 8080 on 18080: the host's address.
		onHost(ctr("2", 1, webLabels...), "edge2", true, "10.0.0.2", map[int]int{8080: 18080}),
		// remote, on a network Levee's container is on (same ID): its own
		// address, even though it publishes.
		onHost(shared, "edge3", true, "10.0.0.3", map[int]int{8080: 28080}),
		// remote, on a network of Levee's name but another ID, publishing
		// nothing: not routed.
		onHost(sameName, "edge3", true, "10.0.0.3", nil),
	}
	p := Parser{OwnNetworks: []string{"bridge", "overlay1"}, OwnNetworkIDs: []string{"local-bridge", "ov1"}}
	eps, ds := p.Parse(cs)
	if len(eps) != 1 {
		t.Fatalf("entrypoints = %+v, want one route web", eps)
	}
	want := "local/c-1@172.17.0.1:8080 edge2/c-2@10.0.0.2:18080 edge3/c-3@10.9.0.3:8080"
	if got := backendList(eps[0].Backends); got != want {
		t.Errorf("backends = %s\nwant       %s", got, want)
	}
	w087 := only(ds, diagnostics.DockerHostUnreachable)
	if len(w087) != 1 || w087[0].Source.ObjectName != "edge3/c-4" || !strings.Contains(w087[0].Message, "Docker host edge3") ||
		w087[0].Key != "levee.http.web.port" {
		t.Errorf("W087 = %+v, want one for edge3/c-4 on its port label", w087)
	}
	// A remote host's container is not reported as sharing no network
	// with Levee (W091): that is the local engine's rule.
	if ws := only(ds, diagnostics.NoSharedNetwork); len(ws) != 0 {
		t.Errorf("W091 on remote containers: %+v", ws)
	}
}

func TestRemoteHostUnknownAddress(t *testing.T) {
	// A remote host reached on a unix socket: its published ports cannot
	// be dialled.
	c := onHost(ctr("1", 0, webLabels...), "sock", true, "", map[int]int{8080: 18080})
	_, ds := Parser{}.Parse([]Container{c})
	w := only(ds, diagnostics.DockerHostUnreachable)
	if len(w) != 1 || !strings.Contains(w[0].Message, "host's address is not known") {
		t.Errorf("W087 = %+v", w)
	}
}

func TestSourceNamesHost(t *testing.T) {
	c := onHost(ctr("1", 0, "levee.enable=true", "levee.http.web.port=x"), "edge2", false, "", nil)
	_, ds := Parser{}.Parse([]Container{c})
	if len(ds) == 0 || ds[0].Source.ObjectName != "edge2/c-1" {
		t.Errorf("diagnostics = %+v, want them to name edge2/c-1", ds)
	}
}

// A host's weight multiplies its backends' weight (the oldest replica's
// weight label, else the default): with edge2 of weight 3, its replica
// takes three parts of the route's traffic to local's one; a weight of 0
// (drained) stays 0, and the product never passes config.MaxWeight.
func TestHostWeightMultipliesBackendWeight(t *testing.T) {
	local := onHost(ctr("1", 0, webLabels...), "local", false, "", nil)
	edge2 := onHost(ctr("2", 1, webLabels...), "edge2", true, "10.0.0.2", map[int]int{8080: 18080})
	edge2.HostWeight = 3
	eps, _ := Parser{}.Parse([]Container{local, edge2})
	if len(eps) != 1 || len(eps[0].Backends) != 2 {
		t.Fatalf("entrypoints = %+v", eps)
	}
	w := map[string]int{}
	for _, b := range eps[0].Backends {
		w[b.Host] = b.Weight
	}
	if w["local"] != config.DefaultWeight || w["edge2"] != 3*config.DefaultWeight {
		t.Errorf("weights = %v, want local %d, edge2 %d", w, config.DefaultWeight, 3*config.DefaultWeight)
	}
	for _, c := range []struct{ weight, host, want int }{
		{0, 5, 0}, {50, 0, 50}, {50, 1, 50}, {50, 4, 200}, {config.MaxWeight, 100, config.MaxWeight},
	} {
		if got := hostWeighted(c.weight, c.host); got != c.want {
			t.Errorf("hostWeighted(%d, %d) = %d, want %d", c.weight, c.host, got, c.want)
		}
	}
}
