package labels

import (
	"reflect"
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
