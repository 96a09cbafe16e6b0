package labels

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// svc builds a Swarm service on network "front" (virtual IP 10.0.1.2) with
// one running task per address given.
func svc(id string, age int, taskIPs []string, labels ...string) Container {
	c := ctr(id, age, labels...)
	c.Name = "s-" + id
	c.Service = true
	c.Networks = []Network{{Name: "front", IP: "10.0.1.2"}}
	for i, ip := range taskIPs {
		c.Tasks = append(c.Tasks, Task{ID: "t" + ip, Name: c.Name + "." + string(rune('1'+i)), Networks: []Network{{Name: "front", IP: ip}, {Name: "ingress", IP: "10.255.0.9"}}})
	}
	return c
}

func swarmParser() Parser { return Parser{Source: config.SourceSwarm} }

func TestParseSwarmServiceTasksAreBackends(t *testing.T) {
	eps, ds := swarmParser().Parse([]Container{svc("1", 0, []string{"10.0.1.5", "10.0.1.6"},
		"levee.enable=true", "levee.http.web.host=web.example.com", "levee.http.web.port=8080")})
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	want := config.DefaultEntrypoint()
	want.ID, want.Name, want.Source, want.Created = "web@swarm", "web", config.SourceSwarm, t0
	want.Hosts = []string{"web.example.com"}
	want.Backends = []config.Backend{
		{Address: "10.0.1.5", Port: 8080, Weight: config.DefaultWeight, Name: "s-1.1"},
		{Address: "10.0.1.6", Port: 8080, Weight: config.DefaultWeight, Name: "s-1.2"},
	}
	if len(eps) != 1 || !reflect.DeepEqual(eps[0], want) {
		t.Fatalf("got %+v\nwant %+v", eps, want)
	}
}

func TestParseSwarmNoTaskNoBackend(t *testing.T) {
	eps, _ := swarmParser().Parse([]Container{svc("1", 0, nil, "levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=80")})
	if len(eps) != 1 || len(eps[0].Backends) != 0 {
		t.Fatalf("a service scaled to 0 is an entrypoint without backends: %+v", eps)
	}
}

func TestParseSwarmVIP(t *testing.T) {
	base := []string{"levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=80"}
	cases := []struct {
		name     string
		c        Container
		backends []string
		diags    []string
	}{
		{"vip", svc("1", 0, []string{"10.0.1.5", "10.0.1.6"}, append(base, "levee.http.web.lb.swarm=true")...),
			[]string{"10.0.1.2"}, nil},
		{"vip off", svc("1", 0, []string{"10.0.1.5"}, append(base, "levee.http.web.lb.swarm=false")...),
			[]string{"10.0.1.5"}, nil},
		{"vip, no task", svc("1", 0, nil, append(base, "levee.http.web.lb.swarm=true")...),
			nil, nil},
		{"bad value", svc("1", 0, []string{"10.0.1.5"}, append(base, "levee.http.web.lb.swarm=vip")...),
			[]string{"10.0.1.5"}, []string{"W028 levee.http.web.lb.swarm"}},
		{"dnsrr: no virtual IP", func() Container {
			c := svc("1", 0, []string{"10.0.1.5"}, append(base, "levee.http.web.lb.swarm=true")...)
			c.Networks[0].IP = ""
			return c
		}(), []string{"10.0.1.5"}, []string{"W071 levee.http.web.lb.swarm"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eps, ds := swarmParser().Parse([]Container{tc.c})
			if got := codes(ds); !reflect.DeepEqual(got, tc.diags) {
				t.Fatalf("diagnostics %v, want %v", got, tc.diags)
			}
			if len(eps) != 1 {
				t.Fatalf("entrypoints: %+v", eps)
			}
			var got []string
			for _, b := range eps[0].Backends {
				got = append(got, b.Address)
			}
			if !reflect.DeepEqual(got, tc.backends) {
				t.Fatalf("backends %v, want %v", got, tc.backends)
			}
		})
	}
}

func TestParseSwarmFieldOnContainer(t *testing.T) {
	eps, ds := Parser{}.Parse([]Container{ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80", "levee.http.app.lb.swarm=true")})
	if got := codes(ds); !reflect.DeepEqual(got, []string{"W072 levee.http.app.lb.swarm"}) {
		t.Fatalf("diagnostics %v", got)
	}
	if len(eps) != 1 || len(eps[0].Backends) != 1 || eps[0].ID != "app" {
		t.Fatalf("the container is routed as usual: %+v", eps)
	}
}

func TestParseSwarmDiagnosticNamesTheService(t *testing.T) {
	_, ds := swarmParser().Parse([]Container{svc("1", 0, []string{"10.0.1.5"},
		"levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=eighty")})
	bad := only(ds, diagnostics.BadPort)
	if len(bad) != 1 {
		t.Fatalf("diagnostics: %v", ds)
	}
	src := bad[0].Source
	if src.Provider != config.SourceSwarm || src.ObjectName != "s-1" || src.ObjectID != "1" || src.Service != "web" {
		t.Fatalf("source %+v: want the swarm service s-1", src)
	}
}

func TestParseSwarmNetworks(t *testing.T) {
	lbl := []string{"levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=80"}
	t.Run("no shared network", func(t *testing.T) {
		p := swarmParser()
		p.OwnNetworks = []string{"other"}
		eps, ds := p.Parse([]Container{svc("1", 0, []string{"10.0.1.5"}, lbl...)})
		w := only(ds, diagnostics.SwarmNoSharedNetwork)
		if len(w) != 1 || !strings.Contains(w[0].Message, "s-1") {
			t.Fatalf("want W070 naming the service: %v", ds)
		}
		if len(eps) != 1 {
			t.Fatalf("entrypoints %+v", eps)
		}
	})
	t.Run("shared network", func(t *testing.T) {
		p := swarmParser()
		p.OwnNetworks = []string{"front"}
		_, ds := p.Parse([]Container{svc("1", 0, []string{"10.0.1.5"}, lbl...)})
		if len(ds) != 0 {
			t.Fatalf("diagnostics %v", ds)
		}
	})
	t.Run("network label picks the tasks' address", func(t *testing.T) {
		c := svc("1", 0, []string{"10.0.1.5"}, append(lbl, "levee.network=back")...)
		c.Networks = append(c.Networks, Network{Name: "back", IP: "10.0.2.2"})
		c.Tasks[0].Networks = append(c.Tasks[0].Networks, Network{Name: "back", IP: "10.0.2.7"})
		eps, ds := swarmParser().Parse([]Container{c})
		if len(ds) != 0 || len(eps) != 1 || len(eps[0].Backends) != 1 || eps[0].Backends[0].Address != "10.0.2.7" {
			t.Fatalf("eps %+v diags %v", eps, ds)
		}
	})
	t.Run("labelled network not attached", func(t *testing.T) {
		_, ds := swarmParser().Parse([]Container{svc("1", 0, []string{"10.0.1.5"}, append(lbl, "levee.network=frnt")...)})
		w := only(ds, diagnostics.NetworkNotFound)
		if len(w) != 1 || w[0].Source.ObjectName != "s-1" || w[0].Hint == "" {
			t.Fatalf("want W009 naming the service with a hint: %v", ds)
		}
	})
	t.Run("task without an address", func(t *testing.T) {
		c := svc("1", 0, []string{"10.0.1.5", "10.0.1.6"}, lbl...)
		c.Tasks[1].Networks = nil
		eps, ds := swarmParser().Parse([]Container{c})
		w := only(ds, diagnostics.NoAddress)
		if len(w) != 1 || !strings.Contains(w[0].Message, "s-1.2") || len(eps[0].Backends) != 1 {
			t.Fatalf("want W010 naming the task and one backend: %v %+v", ds, eps)
		}
	})
}

func TestParseSwarmOffline(t *testing.T) {
	c := svc("1", 0, nil, "levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=80")
	c.Networks, c.Tasks = nil, nil
	p := swarmParser()
	p.Offline = true
	eps, ds := p.Parse([]Container{c})
	if len(ds) != 0 || len(eps) != 1 || len(eps[0].Backends) != 1 || eps[0].Backends[0].Address != "s-1" {
		t.Fatalf("eps %+v diags %v", eps, ds)
	}
}

// published gives task i of c the node address 192.168.1.(10+i) and the
// host-mode port target → port.
func published(c Container, i, target, port int) Container {
	c.Tasks[i].NodeAddr = fmt.Sprintf("192.168.1.%d", 10+i)
	c.Tasks[i].HostPorts = map[int]int{target: port}
	return c
}

// Levee on the host dials a task through the port it publishes in host
// mode, at its node's address; a task without one stays on its overlay
// address with one W073 for the service; in a container, or when where
// Levee runs is not known (validate), the overlay address as before.
func TestParseSwarmOnHost(t *testing.T) {
	lbl := []string{"levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=8080"}
	both := func(labels ...string) Container {
		c := svc("1", 0, []string{"10.0.1.5", "10.0.1.6"}, labels...)
		return published(published(c, 0, 8080, 30001), 1, 8080, 30002)
	}
	onHost := Parser{Source: config.SourceSwarm, OnHost: true}
	inContainer := onHost
	inContainer.OwnNetworks = []string{"front"}
	cases := []struct {
		name     string
		p        Parser
		c        Container
		backends []string
		diags    []string
		// w073 are the tasks the W073 message must name ("" : none).
		w073 string
	}{
		{"host ports: node address and published port", onHost, both(lbl...),
			[]string{"192.168.1.10:30001 s-1.1", "192.168.1.11:30002 s-1.2"}, nil, ""},
		{"in a container: the overlay address", inContainer, both(lbl...),
			[]string{"10.0.1.5:8080 s-1.1", "10.0.1.6:8080 s-1.2"}, nil, ""},
		{"where Levee runs unknown (validate): the overlay address", swarmParser(), both(lbl...),
			[]string{"10.0.1.5:8080 s-1.1", "10.0.1.6:8080 s-1.2"}, nil, ""},
		{"no host port: overlay address and one W073", onHost, svc("1", 0, []string{"10.0.1.5", "10.0.1.6"}, lbl...),
			[]string{"10.0.1.5:8080 s-1.1", "10.0.1.6:8080 s-1.2"}, []string{"W073 levee.http.web.port"}, "tasks s-1.1, s-1.2 publish"},
		{"mixed: each task by its own rule", onHost, published(svc("1", 0, []string{"10.0.1.5", "10.0.1.6"}, lbl...), 0, 8080, 30001),
			[]string{"10.0.1.6:8080 s-1.2", "192.168.1.10:30001 s-1.1"}, []string{"W073 levee.http.web.port"}, "task s-1.2 publishes"},
		{"host port for another target", onHost, published(svc("1", 0, []string{"10.0.1.5"}, lbl...), 0, 9090, 30001),
			[]string{"10.0.1.5:8080 s-1.1"}, []string{"W073 levee.http.web.port"}, "task s-1.1 publishes"},
		{"node address unknown", onHost, func() Container {
			c := published(svc("1", 0, []string{"10.0.1.5"}, lbl...), 0, 8080, 30001)
			c.Tasks[0].NodeAddr = ""
			return c
		}(), []string{"10.0.1.5:8080 s-1.1"}, []string{"W073 levee.http.web.port"}, "task s-1.1 publishes"},
		{"port chosen by Levee: its host port", onHost, func() Container {
			c := published(svc("1", 0, []string{"10.0.1.5"}, "levee.enable=true", "levee.http.web.host=a.com"), 0, 8080, 30001)
			c.ExposedPorts = []int{8080}
			return c
		}(), []string{"192.168.1.10:30001 s-1.1"}, []string{"I002 levee.http.web.port"}, ""},
		{"VIP mode unchanged", onHost, both(append(lbl, "levee.http.web.lb.swarm=true")...),
			[]string{"10.0.1.2:8080 s-1"}, nil, ""},
		{"no network: the host ports alone", onHost, func() Container {
			c := published(svc("1", 0, []string{"10.0.1.5", "10.0.1.6"}, lbl...), 0, 8080, 30001)
			c.Networks = nil
			return c
		}(), []string{"192.168.1.10:30001 s-1.1"}, []string{"W010 "}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eps, ds := tc.p.Parse([]Container{tc.c})
			if got := codes(ds); !reflect.DeepEqual(got, tc.diags) {
				t.Fatalf("diagnostics %v, want %v", ds, tc.diags)
			}
			if len(eps) != 1 {
				t.Fatalf("entrypoints: %+v", eps)
			}
			var got []string
			for _, b := range eps[0].Backends {
				got = append(got, fmt.Sprintf("%s:%d %s", b.Address, b.Port, b.Name))
			}
			sort.Strings(got)
			if !reflect.DeepEqual(got, tc.backends) {
				t.Fatalf("backends %v, want %v", got, tc.backends)
			}
			if w := only(ds, diagnostics.NoAddress); len(w) > 0 && !strings.Contains(w[0].Hint, "publish port 8080 in host mode") {
				t.Errorf("W010 on the host: hint %q, want the host-mode port", w[0].Hint)
			}
			if tc.w073 == "" {
				return
			}
			d := only(ds, diagnostics.SwarmUnreachableFromHost)[0]
			for _, want := range []string{"outside a container", tc.w073 + " no port 8080 in host mode", "network front", "not reachable from the host"} {
				if !strings.Contains(d.Message, want) {
					t.Errorf("W073 message %q does not say %q", d.Message, want)
				}
			}
			if !strings.Contains(d.Hint, "publish port 8080 in host mode") || !strings.Contains(d.Hint, "in a container on network front") {
				t.Errorf("W073 hint %q: want both fixes", d.Hint)
			}
			if d.Source.ObjectName != "s-1" || d.Source.Service != "web" || d.Value != tc.c.Labels["levee.http.web.port"] {
				t.Errorf("W073 source %+v value %q: want service s-1, route web, the port label's value", d.Source, d.Value)
			}
		})
	}
}

// A W073 names at most five tasks and counts the rest.
func TestParseSwarmOnHostNamesFewTasks(t *testing.T) {
	ips := []string{"10.0.1.1", "10.0.1.2", "10.0.1.3", "10.0.1.4", "10.0.1.5", "10.0.1.6", "10.0.1.7"}
	_, ds := Parser{Source: config.SourceSwarm, OnHost: true}.Parse([]Container{svc("1", 0, ips,
		"levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=8080")})
	w := only(ds, diagnostics.SwarmUnreachableFromHost)
	if len(w) != 1 || !strings.Contains(w[0].Message, "tasks s-1.1, s-1.2, s-1.3, s-1.4, s-1.5 and 2 more publish") {
		t.Fatalf("want one W073 naming five tasks and 2 more: %v", ds)
	}
}

// W073 is per route: the route whose port is published in host mode has
// none, the other route of the same service has its own.
func TestParseSwarmOnHostPerRoute(t *testing.T) {
	c := svc("1", 0, []string{"10.0.1.5"}, "levee.enable=true",
		"levee.http.web.host=a.com", "levee.http.web.port=8080",
		"levee.http.admin.host=admin.a.com", "levee.http.admin.port=9090")
	c = published(c, 0, 8080, 30001)
	eps, ds := Parser{Source: config.SourceSwarm, OnHost: true}.Parse([]Container{c})
	if got := codes(ds); !reflect.DeepEqual(got, []string{"W073 levee.http.admin.port"}) {
		t.Fatalf("diagnostics %v", ds)
	}
	if len(eps) != 2 || eps[0].Backends[0].Address != "10.0.1.5" || eps[1].Backends[0].Port != 30001 {
		t.Fatalf("entrypoints %+v", eps)
	}
}

// A task whose host port for the route is ambiguous (two numbers, one per
// address family, on a node the provider cannot inspect) is not dialled
// by a Levee on the host, neither at a guessed port nor on the overlay:
// W090 names it; the service's other tasks are routed. In a container the
// overlay address is used as always.
func TestParseSwarmOnHostAmbiguousPortIsNotDialled(t *testing.T) {
	c := svc("1", 0, []string{"10.0.1.5", "10.0.1.6"}, "levee.enable=true", "levee.http.web.host=a.com", "levee.http.web.port=8080")
	c = published(c, 1, 8080, 30002)
	c.Tasks[0].NodeAddr = "192.168.1.10"
	c.Tasks[0].AmbiguousPorts = map[int][]int{8080: {32771, 32772}}
	eps, ds := Parser{Source: config.SourceSwarm, OnHost: true}.Parse([]Container{c})
	if got := codes(ds); !reflect.DeepEqual(got, []string{"W090 levee.http.web.port"}) {
		t.Fatalf("diagnostics %v, want one W090", ds)
	}
	if len(eps) != 1 || len(eps[0].Backends) != 1 || eps[0].Backends[0].Address != "192.168.1.11" || eps[0].Backends[0].Port != 30002 {
		t.Fatalf("entrypoints %+v: want only task s-1.2 at its host port", eps)
	}
	d := ds[0]
	for _, want := range []string{"task s-1.1", "port 8080", "32771 and 32772", "192.168.1.10", "no traffic"} {
		if !strings.Contains(d.Message, want) {
			t.Errorf("W090 message %q does not say %q", d.Message, want)
		}
	}
	if !strings.Contains(d.Hint, "published: 8080, mode: host") {
		t.Errorf("W090 hint %q: want the fixed host-mode port", d.Hint)
	}
	in := Parser{Source: config.SourceSwarm, OnHost: true, OwnNetworks: []string{"front"}}
	eps, ds = in.Parse([]Container{c})
	if len(ds) != 0 || len(eps) != 1 || len(eps[0].Backends) != 2 {
		t.Fatalf("in a container: entrypoints %+v diagnostics %v, want both tasks on the overlay", eps, ds)
	}
}
