package docker

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// webOn is a container of service web on one host, publishing its port
// 8080 on host port published (none when 0).
func webOn(id, name, ip string, published int) container.InspectResponse {
	r := ctr{id: id, name: name, labels: map[string]string{
		"levee.enable": "true", "levee.http.web.host": "web.example", "levee.http.web.port": "8080",
	}, nets: map[string]string{"bridge": ip}, ports: []string{"8080/tcp"}}.inspect()
	if published > 0 {
		r.NetworkSettings.Ports = network.PortMap{network.MustParsePort("8080/tcp"): {
			{HostIP: netip.MustParseAddr("0.0.0.0"), HostPort: fmt.Sprint(published)},
			{HostIP: netip.MustParseAddr("::"), HostPort: fmt.Sprint(published)},
		}}
	}
	return r
}

// updates is a sink that keeps every update.
type updates chan config.SourceUpdate

func (u updates) Update(su config.SourceUpdate) { u <- su }

// waitFor returns the first update that satisfies ok.
func (u updates) waitFor(t *testing.T, what string, ok func(config.SourceUpdate) bool) config.SourceUpdate {
	t.Helper()
	deadline := time.After(waitLimit)
	var last config.SourceUpdate
	for {
		select {
		case su := <-u:
			if ok(su) {
				return su
			}
			last = su
		case <-deadline:
			t.Fatalf("no update with %s; last: %+v", what, last)
		}
	}
}

func backendsOf(su config.SourceUpdate, id string) []config.Backend {
	for _, ep := range su.Entrypoints {
		if ep.ID == id {
			return ep.Backends
		}
	}
	return nil
}

func backendText(bs []config.Backend) string {
	var out []string
	for _, b := range bs {
		out = append(out, fmt.Sprintf("%s/%s@%s:%d", b.Host, b.Name, b.Address, b.Port))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func hasCode(su config.SourceUpdate, code diagnostics.Code, object string) bool {
	return slices.ContainsFunc(su.Diagnostics, func(d diagnostics.Diagnostic) bool {
		return d.Code == code && strings.Contains(d.Source.ObjectName, object)
	})
}

// runHosts runs two hosts over fake engines: local (a socket, Levee on
// the host: dialled directly) and edge2 (tcp: remote).
func runHosts(t *testing.T, local, edge2 *fakeEngine) (*Hosts, updates, *prometheus.Registry) {
	t.Helper()
	engines := map[string]*fakeEngine{"unix:///run/local.sock": local, "tcp://10.0.0.2:2376": edge2}
	reg := prometheus.NewRegistry()
	opts := Options{
		Hostname: "not-a-container", SelfID: "not-a-container-id", Registerer: reg,
		Logger:       zerolog.Nop(),
		PingInterval: 20 * time.Millisecond, CallTimeout: time.Second,
		RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond, Debounce: time.Millisecond,
		Jitter: func() float64 { return 0 },
	}
	specs := []HostSpec{{Name: "local", URL: "unix:///run/local.sock"}, {Name: "edge2", URL: "tcp://10.0.0.2:2376"}}
	h, err := newHosts(opts, specs, func(o Options) (*Provider, error) { return newProvider(o, engines[o.Host]) })
	if err != nil {
		t.Fatal(err)
	}
	sink := make(updates, 1000)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v after cancel", err)
		}
	})
	return h, sink, reg
}

func TestHostsMergeReplicasAcrossHosts(t *testing.T) {
	local, edge2 := newFakeEngine(), newFakeEngine()
	// The same container ID and name on both hosts: two backends all the
	// same, each with its host.
	local.set(webOn("c1", "web-1", "172.17.0.2", 0))
	edge2.set(webOn("c1", "web-1", "172.17.0.2", 18080))
	_, sink, reg := runHosts(t, local, edge2)

	want := "edge2/web-1@10.0.0.2:18080 local/web-1@172.17.0.2:8080"
	su := sink.waitFor(t, want, func(su config.SourceUpdate) bool { return backendText(backendsOf(su, "web")) == want })
	if su.Source != config.SourceDocker || len(su.Entrypoints) != 1 {
		t.Errorf("update = source %q with %d entrypoints, want one route of docker", su.Source, len(su.Entrypoints))
	}
	for _, host := range []string{"local", "edge2"} {
		if v := metricValue(t, reg, "levee_provider_connected", map[string]string{"provider": "docker", "host": host}); v != 1 {
			t.Errorf("levee_provider_connected{host=%q} = %v, want 1", host, v)
		}
	}
}

func TestHostsLostHostIsTakenOutAndComesBack(t *testing.T) {
	local, edge2 := newFakeEngine(), newFakeEngine()
	local.set(webOn("a", "web-1", "172.17.0.2", 0))
	edge2.set(webOn("b", "web-2", "172.18.0.2", 18080))
	h, sink, _ := runHosts(t, local, edge2)
	both := "edge2/web-2@10.0.0.2:18080 local/web-1@172.17.0.2:8080"
	sink.waitFor(t, both, func(su config.SourceUpdate) bool { return backendText(backendsOf(su, "web")) == both })

	edge2.setDown(errors.New("connection refused"))
	only := "local/web-1@172.17.0.2:8080"
	su := sink.waitFor(t, "edge2 taken out", func(su config.SourceUpdate) bool { return backendText(backendsOf(su, "web")) == only })
	if !hasCode(su, diagnostics.DockerHostLost, "edge2") {
		t.Errorf("diagnostics = %+v, want W086 for edge2", su.Diagnostics)
	}
	if st := h.Providers()[0].Status(); st.State != "connected" {
		t.Errorf("local = %s, want connected while edge2 is down", st.State)
	}

	edge2.setDown(nil)
	su = sink.waitFor(t, "edge2 back", func(su config.SourceUpdate) bool { return backendText(backendsOf(su, "web")) == both })
	if hasCode(su, diagnostics.DockerHostLost, "edge2") {
		t.Errorf("W086 kept after edge2 came back: %+v", su.Diagnostics)
	}
}

func TestHostsRemoteContainerWithoutPublishedPortIsNotRouted(t *testing.T) {
	local, edge2 := newFakeEngine(), newFakeEngine()
	edge2.set(webOn("b", "web-2", "172.18.0.2", 0))
	_, sink, _ := runHosts(t, local, edge2)
	su := sink.waitFor(t, "W087", func(su config.SourceUpdate) bool {
		return hasCode(su, diagnostics.DockerHostUnreachable, "edge2/web-2")
	})
	if bs := backendsOf(su, "web"); len(bs) != 0 {
		t.Errorf("backends = %s, want none", backendText(bs))
	}
}

func TestNewHostsRefusesSwarm(t *testing.T) {
	_, err := NewHosts(Options{Swarm: true}, []HostSpec{{Name: "a", URL: "unix:///a.sock"}})
	if err == nil || !strings.Contains(err.Error(), "one --docker-host") {
		t.Errorf("err = %v, want swarm refused", err)
	}
}

// The join decides per host how its containers are dialled.
func TestHostsJoinTellsLocalFromRemote(t *testing.T) {
	set := &hostSet{byName: map[string]*hostView{}}
	for _, s := range []HostSpec{{Name: "sock", URL: "unix:///var/run/docker.sock"}, {Name: "edge2", URL: "tcp://[fd00::2]:2376"}, {Name: "edge3", URL: "tcp://edge3.lan:2376"}} {
		set.add(s)
		set.byName[s.Name].facts.containers = []labels.Container{{ID: "x", Name: "c"}}
	}
	remote := func(cs []labels.Container) string {
		var out []string
		for _, c := range cs {
			out = append(out, fmt.Sprintf("%s:%v:%s", c.Host, c.Remote, c.HostAddr))
		}
		return strings.Join(out, " ")
	}
	cs, parser := set.join()
	if got, want := remote(cs), "sock:false: edge2:true:fd00::2 edge3:true:edge3.lan"; got != want || !parser.OnHost {
		t.Errorf("Levee on the host: %s (OnHost %v), want %s", got, parser.OnHost, want)
	}
	// A forwarded socket with an address given is remote.
	set.byName["sock"].spec.Addr = "10.0.0.9"
	if cs, _ := set.join(); !strings.HasPrefix(remote(cs), "sock:true:10.0.0.9 ") {
		t.Errorf("forwarded socket: %s, want remote at 10.0.0.9", remote(cs))
	}
	set.byName["sock"].spec.Addr = ""
	// Levee in a container on edge2: the socket is another machine's view.
	set.byName["edge2"].facts.ownFound = true
	set.byName["edge2"].facts.ownNetIDs = []string{"n1"}
	cs, parser = set.join()
	if got, want := remote(cs), "sock:true: edge2:false:fd00::2 edge3:true:edge3.lan"; got != want || parser.OnHost || !slices.Equal(parser.OwnNetworkIDs, []string{"n1"}) {
		t.Errorf("Levee on edge2: %s (OnHost %v, IDs %v), want %s", got, parser.OnHost, parser.OwnNetworkIDs, want)
	}
}

func TestHostsDownFromTheStartIsSettledWithW086(t *testing.T) {
	local, edge2 := newFakeEngine(), newFakeEngine()
	local.set(webOn("a", "web-1", "172.17.0.2", 0))
	edge2.setDown(errors.New("connection refused"))
	h, sink, _ := runHosts(t, local, edge2)
	sink.waitFor(t, "W086 and local's backend", func(su config.SourceUpdate) bool {
		return hasCode(su, diagnostics.DockerHostLost, "edge2") && backendText(backendsOf(su, "web")) == "local/web-1@172.17.0.2:8080"
	})
	edge := h.Providers()[1]
	if edge.Synced() || !edge.Settled() {
		t.Errorf("edge2 down from the start: Synced %v, Settled %v; want settled without a sync", edge.Synced(), edge.Settled())
	}
}

// JoinHosts tags containers as the provider of several hosts does: each
// names its host, a tcp:// host's containers are remote at its address, a
// socket host without an address is local, one with an address remote.
func TestJoinHostsTagsAsServeDoes(t *testing.T) {
	specs := []HostSpec{
		{Name: "local", URL: "unix:///var/run/docker.sock"},
		{Name: "edge2", URL: "tcp://10.0.0.2:2376"},
		{Name: "edge3", URL: "unix:///run/edge3.sock", Addr: "10.0.0.3", Weight: 2},
	}
	lists := [][]labels.Container{{{Name: "a"}}, {{Name: "b"}}, {{Name: "c"}}}
	got := JoinHosts(specs, lists)
	want := []labels.Container{
		{Name: "a", Host: "local"},
		{Name: "b", Host: "edge2", Remote: true, HostAddr: "10.0.0.2"},
		{Name: "c", Host: "edge3", Remote: true, HostAddr: "10.0.0.3", HostWeight: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("JoinHosts = %+v", got)
	}
	for i := range want {
		g := got[i]
		if g.Name != want[i].Name || g.Host != want[i].Host || g.Remote != want[i].Remote || g.HostAddr != want[i].HostAddr || g.HostWeight != want[i].HostWeight {
			t.Errorf("container %d = %+v, want %+v", i, g, want[i])
		}
	}
}
