package labels

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/constraint"
	"github.com/levee-proxy/levee/router/config"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ctr(id string, age int, labels ...string) Container {
	c := Container{ID: id, Name: "c-" + id, Created: t0.Add(time.Duration(age) * time.Second), Labels: map[string]string{},
		Networks: []Network{{Name: "bridge", IP: "172.17.0." + id}}}
	for _, l := range labels {
		k, v, _ := strings.Cut(l, "=")
		c.Labels[k] = v
	}
	return c
}

func codes(ds []diagnostics.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Code)+" "+d.Key)
	}
	return out
}

func only(ds []diagnostics.Diagnostic, code diagnostics.Code) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for _, d := range ds {
		if d.Code == code {
			out = append(out, d)
		}
	}
	return out
}

func TestParseBasic(t *testing.T) {
	eps, ds := Parser{}.Parse([]Container{ctr("1", 0, "levee.enable=true", "levee.http.app.host=App.example.com", "levee.http.app.port=8080")})
	if len(ds) != 0 {
		t.Fatalf("diagnostics: %v", ds)
	}
	want := config.DefaultEntrypoint()
	want.ID, want.Name, want.Source, want.Created = "app", "app", config.SourceDocker, t0
	want.Hosts = []string{"app.example.com"}
	want.Backends = []config.Backend{{Address: "172.17.0.1", Port: 8080, Weight: config.DefaultWeight, Name: "c-1"}}
	if len(eps) != 1 || !reflect.DeepEqual(eps[0], want) {
		t.Fatalf("got %+v\nwant %+v", eps, want)
	}
}

func TestParseEnable(t *testing.T) {
	svc, port := "levee.http.app.host=a.com", "levee.http.app.port=80"
	cases := []struct {
		name      string
		byDefault bool
		labels    []string
		routed    bool
		codes     []string
	}{
		{"no enable label", false, []string{svc, port}, false, nil},
		{"enable=false", true, []string{"levee.enable=false", svc, port}, false, nil},
		{"exposed by default", true, []string{svc, port}, true, nil},
		{"enable=YES", false, []string{"levee.enable=YES", svc, port}, true, nil},
		{"enable=on", false, []string{"levee.enable=on", svc, port}, true, nil},
		{"bad enable falls back to default off", false, []string{"levee.enable=yep", svc, port}, false, []string{"W028 levee.enable"}},
		{"bad enable falls back to default on", true, []string{"levee.enable=yep", svc, port}, true, []string{"W028 levee.enable"}},
		{"not enabled with bad labels: silent", false, []string{"levee.http.app.port=x"}, false, nil},
		{"unrelated container by default: silent", true, []string{"com.example=1"}, false, nil},
		{"enabled without service", false, []string{"levee.enable=true"}, false, []string{"E004 levee.enable"}},
		{"enable in another case", false, []string{"levee.Enable=true", svc, port}, true, nil},
		{"misspelled enable", false, []string{"levee.enabel=true", svc, port}, false, []string{"W013 levee.enabel"}},
		{"misspelled enable, other prefix", false, []string{"traefik.enable=true", "levee.enabled=true", svc, port}, false, []string{"W013 levee.enabled"}},
	}
	for _, c := range cases {
		eps, ds := Parser{ExposedByDefault: c.byDefault}.Parse([]Container{ctr("1", 0, c.labels...)})
		if (len(eps) == 1) != c.routed {
			t.Errorf("%s: routed %v, want %v", c.name, len(eps) == 1, c.routed)
		}
		if got := codes(ds); !reflect.DeepEqual(got, c.codes) {
			t.Errorf("%s: diagnostics %v, want %v", c.name, got, c.codes)
		}
	}
}

func TestParsePrefix(t *testing.T) {
	c := ctr("1", 0, "sozune.enable=true", "sozune.http.app.host=a.com", "sozune.http.app.prefix=/api", "levee.http.other.host=b.com")
	eps, ds := Parser{Prefix: "sozune"}.Parse([]Container{c})
	if len(eps) != 1 || eps[0].ID != "app" || eps[0].Path != "/api" {
		t.Fatalf("sozune prefix: %+v", eps)
	}
	if got := codes(ds); !reflect.DeepEqual(got, []string{"I002 sozune.http.app.port"}) {
		t.Errorf("diagnostics %v", got)
	}
}

// One bad value never costs more than its field; one bad service never
// costs its neighbours.
func TestParseIsolation(t *testing.T) {
	c1 := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80",
		"levee.http.app.circuitBreaker.threshold=abc", "levee.http.nohost.port=80")
	c2 := ctr("2", 1, "levee.enable=true", "levee.http.b.host=b.com", "levee.http.b.port=80")
	eps, ds := Parser{}.Parse([]Container{c1, c2})
	if len(eps) != 2 || eps[0].ID != "app" || eps[1].ID != "b" {
		t.Fatalf("entrypoints %+v", eps)
	}
	cb := eps[0].CircuitBreaker
	if cb == nil || cb.Params.Threshold != 0.5 {
		t.Errorf("breaker with default threshold expected: %+v", cb)
	}
	want := []string{"W024 levee.http.app.circuitBreaker.threshold", "E002 levee.http.nohost.host"}
	if got := codes(ds); !reflect.DeepEqual(got, want) {
		t.Errorf("diagnostics %v, want %v", got, want)
	}
	for _, d := range ds {
		if d.Source.Provider != "docker" || d.Source.ObjectID != "1" || d.Source.ObjectName != "c-1" {
			t.Errorf("source of %v", d)
		}
	}
	if ds[0].Source.Service != "app" || ds[0].Value != "abc" || ds[0].Fallback != "0.5" {
		t.Errorf("W024: %+v", ds[0])
	}
}

func TestParseGrammarErrors(t *testing.T) {
	c := ctr("1", 0, "levee.enable=true", "levee.enabel=true", "levee.http.app", "levee.http.app.host=a.com",
		"levee.http.app.port=80", "levee.http.app.circuitbreaker.treshold=0.5", "levee.udp.db.port=5432",
		"levee.htp.web.host=w.com", "levee.http..host=x.com")
	eps, ds := Parser{}.Parse([]Container{c})
	if len(eps) != 1 {
		t.Fatalf("entrypoints %+v", eps)
	}
	hints := map[string]string{}
	for _, d := range ds {
		hints[string(d.Code)+" "+d.Key] = d.Hint
	}
	want := map[string]string{
		"W013 levee.enabel":                           "did you mean levee.enable?",
		"W013 levee.http.app":                         "",
		"W013 levee.http..host":                       "",
		"W013 levee.http.app.circuitbreaker.treshold": "did you mean levee.http.app.circuitBreaker.threshold?",
		"W012 levee.udp.db.port":                      "",
		"W012 levee.htp.web.host":                     "did you mean levee.http.web.host?",
	}
	if !reflect.DeepEqual(hints, want) {
		t.Errorf("diagnostics:\n got %v\nwant %v", hints, want)
	}
}

// W012 must quote the label as written: the key and the value of a real
// label, not the protocol in the value column.
func TestParseUnknownProtocolReportsLabel(t *testing.T) {
	c := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com",
		"levee.grpc.db.port=5432", "levee.grpc.db.rule=HostSNI(`*`)",
		"levee.UDP.dns.port=53")
	_, ds := Parser{}.Parse([]Container{c})
	got := map[string]string{}
	for _, d := range only(ds, diagnostics.UnknownProtocol) {
		got[d.Key] = d.Value
		if d.Source.Service == "" {
			t.Errorf("W012 without a service: %+v", d)
		}
	}
	want := map[string]string{
		"levee.grpc.db.port": "5432",
		"levee.UDP.dns.port": "53",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("W012 key/value:\n got %v\nwant %v", got, want)
	}
	for _, d := range only(ds, diagnostics.UnknownProtocol) {
		if d.Source.Service == "db" && !strings.Contains(d.Message, `"grpc"`) {
			t.Errorf("message must name the protocol: %q", d.Message)
		}
	}
}

func TestParseReplicas(t *testing.T) {
	old := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com,b.com", "levee.http.app.port=80", "levee.http.app.weight=5")
	same := ctr("2", 1, "levee.enable=true", "levee.http.app.host=b.com, a.com", "levee.http.app.port=80", "levee.http.app.weight=5")
	differ := ctr("3", 2, "levee.enable=true", "levee.http.app.host=a.com,b.com", "levee.http.app.port=81", "levee.http.app.priority=3")
	// Input order must not matter: the oldest wins.
	eps, ds := Parser{}.Parse([]Container{differ, same, old})
	if len(eps) != 1 {
		t.Fatalf("want one entrypoint, got %+v", eps)
	}
	ep := eps[0]
	if ep.ID != "app" || ep.Priority != 0 || !ep.Created.Equal(t0) {
		t.Errorf("oldest container's labels must win: %+v", ep)
	}
	wantB := []config.Backend{
		{Address: "172.17.0.1", Port: 80, Weight: 5, Name: "c-1"},
		{Address: "172.17.0.2", Port: 80, Weight: 5, Name: "c-2"},
		{Address: "172.17.0.3", Port: 80, Weight: 5, Name: "c-3"},
	}
	if !reflect.DeepEqual(ep.Backends, wantB) {
		t.Errorf("backends %+v", ep.Backends)
	}
	w := only(ds, diagnostics.ReplicasDisagree)
	if len(w) != 1 || w[0].Source.ObjectID != "3" || len(ds) != 1 {
		t.Fatalf("want one W031 on the differing replica, got %v", ds)
	}
	for _, k := range []string{"levee.http.app.port", "levee.http.app.priority", "levee.http.app.weight", "levee.http.app.host"} {
		if strings.Contains(w[0].Value, k) != (k != "levee.http.app.host") {
			t.Errorf("W031 value %q and key %s", w[0].Value, k)
		}
	}
}

func TestParseSameServiceDifferentHosts(t *testing.T) {
	a := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80")
	b := ctr("2", 1, "levee.enable=true", "levee.http.app.host=b.com", "levee.http.app.port=80")
	taken := ctr("3", 2, "levee.enable=true", "levee.http.app-2.host=c.com", "levee.http.app-2.port=80")
	eps, _ := Parser{}.Parse([]Container{b, taken, a})
	var ids []string
	for _, ep := range eps {
		ids = append(ids, ep.ID+"="+ep.Hosts[0])
	}
	if want := []string{"app=a.com", "app-2=c.com", "app-3=b.com"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
}

func TestParseNetworkChoice(t *testing.T) {
	base := []string{"levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80"}
	nets := []Network{{Name: "zeta", IP: "10.0.0.3"}, {Name: "alpha", IP: "10.0.0.1"}, {Name: "mid", IP: "10.0.0.2"}}
	cases := []struct {
		name  string
		label string
		own   []string
		nets  []Network
		addr  string
		codes []string
	}{
		{"first by name", "", nil, nets, "10.0.0.1", nil},
		{"shared with Levee", "", []string{"zeta"}, nets, "10.0.0.3", nil},
		{"label wins", "mid", []string{"zeta"}, nets, "10.0.0.2", nil},
		{"label not attached", "midd", nil, nets, "10.0.0.1", []string{"W009 levee.network"}},
		{"no network", "", nil, nil, "", []string{"W010 "}},
		{"no IP", "", nil, []Network{{Name: "host"}}, "", []string{"W010 "}},
	}
	for _, c := range cases {
		ct := ctr("1", 0, base...)
		ct.Networks = c.nets
		if c.label != "" {
			ct.Labels["levee.network"] = c.label
		}
		eps, ds := Parser{OwnNetworks: c.own}.Parse([]Container{ct})
		if len(eps) != 1 {
			t.Fatalf("%s: entrypoint missing", c.name)
		}
		var addr string
		if len(eps[0].Backends) == 1 {
			addr = eps[0].Backends[0].Address
		}
		if addr != c.addr {
			t.Errorf("%s: address %q, want %q", c.name, addr, c.addr)
		}
		if got := codes(ds); !reflect.DeepEqual(got, c.codes) {
			t.Errorf("%s: diagnostics %v, want %v", c.name, got, c.codes)
		}
		if c.label == "midd" && (ds[0].Hint != "did you mean mid?" || ds[0].Fallback != "alpha") {
			t.Errorf("W009: %+v", ds[0])
		}
	}
}

func TestParsePortChoice(t *testing.T) {
	cases := []struct {
		exposed []int
		label   string
		port    int
		info    string
	}{
		{nil, "9000", 9000, ""},
		{[]int{8080}, "", 8080, "only exposed port"},
		{[]int{9090, 8080}, "", 8080, "lowest of the exposed ports 8080, 9090"},
		{nil, "", 80, "exposes no port"},
		{[]int{8080}, "x", 8080, "only exposed port"},
	}
	for _, c := range cases {
		ct := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com")
		ct.ExposedPorts = c.exposed
		if c.label != "" {
			ct.Labels["levee.http.app.port"] = c.label
		}
		eps, ds := Parser{}.Parse([]Container{ct})
		if got := eps[0].Backends[0].Port; got != c.port {
			t.Errorf("%v %q: port %d, want %d", c.exposed, c.label, got, c.port)
		}
		info := only(ds, diagnostics.PortDefaulted)
		if c.info == "" {
			if len(info) != 0 {
				t.Errorf("%v %q: unexpected %v", c.exposed, c.label, info)
			}
			continue
		}
		if len(info) != 1 || !strings.Contains(info[0].Message, c.info) || info[0].Severity != diagnostics.Info || info[0].Key != "levee.http.app.port" {
			t.Errorf("%v %q: I002 %v, want message with %q", c.exposed, c.label, info, c.info)
		}
	}
}

func TestParseHealth(t *testing.T) {
	lbl := []string{"levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80"}
	healthy, starting, unhealthy, none := ctr("1", 0, lbl...), ctr("2", 1, lbl...), ctr("3", 2, lbl...), ctr("4", 3, lbl...)
	healthy.HasHealthcheck, healthy.Health = true, "healthy"
	starting.HasHealthcheck, starting.Health = true, "starting"
	unhealthy.HasHealthcheck, unhealthy.Health = true, "unhealthy"
	eps, ds := Parser{}.Parse([]Container{healthy, starting, unhealthy, none})
	if len(ds) != 0 || len(eps) != 1 {
		t.Fatalf("%+v %v", eps, ds)
	}
	var names []string
	for _, b := range eps[0].Backends {
		names = append(names, b.Name)
	}
	if !reflect.DeepEqual(names, []string{"c-1", "c-4"}) {
		t.Errorf("backends %v, want healthy and no-healthcheck only", names)
	}
	// All unhealthy: the route stays, with no backend (the router answers 503).
	eps, _ = Parser{}.Parse([]Container{unhealthy})
	if len(eps) != 1 || len(eps[0].Backends) != 0 {
		t.Errorf("all unhealthy: %+v", eps)
	}
}

func TestParseOffline(t *testing.T) {
	c := ctr("1", 0, "levee.enable=true", "levee.network=nope", "levee.http.app.host=a.com", "levee.http.app.port=80")
	c.Networks = nil
	eps, ds := Parser{Offline: true}.Parse([]Container{c})
	if len(ds) != 0 || len(eps) != 1 || eps[0].Backends[0].Address != "c-1" {
		t.Errorf("offline: %+v %v", eps, ds)
	}
}

func TestParseDeterministic(t *testing.T) {
	var cs []Container
	for i, id := range []string{"1", "2", "3", "4", "5"} {
		cs = append(cs, ctr(id, i%2, "levee.enable=true", "levee.http.app.host=a.com", "levee.http.web.host=w.com",
			"levee.http.app.weight=x", "levee.http.web.bogus=1", "levee.http.svc"+id+".port=80"))
	}
	eps0, ds0 := Parser{}.Parse(cs)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20; i++ {
		sh := append([]Container(nil), cs...)
		r.Shuffle(len(sh), func(a, b int) { sh[a], sh[b] = sh[b], sh[a] })
		eps, ds := Parser{}.Parse(sh)
		if !reflect.DeepEqual(eps, eps0) || !reflect.DeepEqual(ds, ds0) {
			t.Fatalf("output depends on input order")
		}
	}
	// The input is not modified.
	if cs[0].Labels["levee.http.app.weight"] != "x" || len(cs[0].Networks) != 1 {
		t.Errorf("input modified")
	}
}

// A container labelled for Traefik only gets one I003, whatever the number
// of its traefik labels and whether it is enabled; one that also carries
// Levee labels (being migrated) and one with neither get none.
func TestParseTraefikOnly(t *testing.T) {
	traefik := []string{"traefik.enable=true", "traefik.http.routers.app.rule=Host(`a.com`)",
		"traefik.http.services.app.loadbalancer.server.port=8080"}
	cases := []struct {
		name   string
		parser Parser
		labels []string
		want   int
	}{
		{"traefik only", Parser{}, traefik, 1},
		{"traefik only, exposed by default", Parser{ExposedByDefault: true}, traefik, 1},
		{"traefik and levee", Parser{}, append([]string{"levee.enable=false"}, traefik...), 0},
		{"traefik and levee, routed", Parser{}, append([]string{"levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80"}, traefik...), 0},
		{"traefik, other prefix", Parser{Prefix: "sozune"}, append([]string{"levee.enable=true"}, traefik...), 1},
		{"prefix traefik", Parser{Prefix: "traefik"}, traefik, 0},
		{"neither", Parser{}, []string{"com.docker.compose.service=db"}, 0},
		{"neither, exposed by default", Parser{ExposedByDefault: true}, nil, 0},
	}
	for _, c := range cases {
		_, ds := c.parser.Parse([]Container{ctr("1", 0, c.labels...)})
		got := only(ds, diagnostics.TraefikLabels)
		if len(got) != c.want {
			t.Errorf("%s: %d I003 in %v, want %d", c.name, len(got), ds, c.want)
			continue
		}
		if c.want == 0 {
			continue
		}
		d := got[0]
		prefix := c.parser.Prefix
		if prefix == "" {
			prefix = DefaultPrefix
		}
		if d.Severity != diagnostics.Info || d.Source.ObjectName != "c-1" || d.Source.Service != "" ||
			d.Key != "traefik.enable" || d.Value != "true" ||
			!strings.Contains(d.Message, "no "+prefix+".* label") || !strings.Contains(d.Hint, "docs/migrating.md") {
			t.Errorf("%s: %+v", c.name, d)
		}
	}
}

// Traefik's keys moved under Levee's prefix get the foreign-key table's
// hint, in a service and straight under the prefix.
func TestParseForeignKeyHints(t *testing.T) {
	c := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=80",
		"levee.http.app.tls.certresolver=le", "levee.http.app.loadbalancer.server.port=8080", "levee.tls=true")
	_, ds := Parser{}.Parse([]Container{c})
	hints := map[string]string{}
	for _, d := range only(ds, diagnostics.UnknownKey) {
		hints[d.Key] = d.Hint
	}
	want := map[string]string{
		"levee.http.app.tls.certresolver":         "tls.certresolver is a Traefik key: Levee calls this levee.http.app.tls;",
		"levee.http.app.loadbalancer.server.port": "loadbalancer.server.port is a Traefik key: Levee calls this levee.http.app.port (see docs/migrating.md)",
		"levee.tls": "a service field: write levee.http.<service>.tls",
	}
	if len(hints) != len(want) {
		t.Fatalf("W013 hints %v", hints)
	}
	for k, w := range want {
		if !strings.HasPrefix(hints[k], w) {
			t.Errorf("%s: hint %q, want %q…", k, hints[k], w)
		}
	}
}

// A constraint leaves out the objects it rejects as if they had no label:
// no route and no diagnostic, whatever their labels say.
func TestParseConstraintLeavesOutOtherObjects(t *testing.T) {
	shop := ctr("1", 0, "com.docker.compose.project=shop", "levee.enable=true", "levee.http.web.host=shop.com")
	blog := ctr("2", 1, "com.docker.compose.project=blog", "levee.enable=true", "levee.http.web.host=blog.com",
		"levee.http.web.circuitBreaker.threshold=lots")
	only, err := constraint.Parse(`Label("com.docker.compose.project","shop")`)
	if err != nil {
		t.Fatal(err)
	}
	eps, ds := Parser{Constraint: only}.Parse([]Container{shop, blog})
	if len(eps) != 1 || eps[0].Hosts[0] != "shop.com" {
		t.Fatalf("entrypoints %+v, want shop.com only", eps)
	}
	for _, d := range ds {
		if d.Source.ObjectID == blog.ID {
			t.Errorf("a diagnostic for the left-out container: %v", d)
		}
	}
	if eps, _ := (Parser{}).Parse([]Container{shop, blog}); len(eps) != 2 {
		t.Fatalf("without a constraint: %d entrypoints, want both", len(eps))
	}
}

// Levee in a container says at discovery when it shares no network with a
// labelled container (W091): its requests would time out. Outside a
// container, or on the host's network, it cannot tell and says nothing.
func TestParseContainerSharingNoNetworkWithLevee(t *testing.T) {
	c := ctr("5", 0, "levee.enable=true", "levee.http.web.host=a.com")
	c.Networks = []Network{{Name: "shop_default", IP: "172.18.0.5"}}
	_, ds := Parser{OwnNetworks: []string{"levee_default"}}.Parse([]Container{c})
	w := only(ds, diagnostics.NoSharedNetwork)
	if len(w) != 1 {
		t.Fatalf("diagnostics %v, want one W091", ds)
	}
	for _, want := range []string{"container c-5", "shop_default", "levee_default", "time out"} {
		if !strings.Contains(w[0].Message, want) {
			t.Errorf("W091 message %q does not say %q", w[0].Message, want)
		}
	}
	if w[0].Key != "levee.network" || !strings.Contains(w[0].Hint, "attach Levee and the container to one network") {
		t.Errorf("W091 key %q hint %q", w[0].Key, w[0].Hint)
	}
	for name, p := range map[string]Parser{
		"shares one":          {OwnNetworks: []string{"levee_default", "shop_default"}},
		"not in a container":  {},
		"on the host network": {OwnNetworks: []string{"host"}},
		"offline (validate)":  {OwnNetworks: []string{"levee_default"}, Offline: true},
	} {
		if _, ds := p.Parse([]Container{c}); len(only(ds, diagnostics.NoSharedNetwork)) != 0 {
			t.Errorf("%s: %v, want no W091", name, ds)
		}
	}
}

// A port label that is given but invalid is W001, and the port chosen
// instead (I002) says so rather than "no port label".
func TestInvalidPortLabelIsNotAMissingOne(t *testing.T) {
	c := ctr("1", 0, "levee.enable=true", "levee.http.app.host=a.com", "levee.http.app.port=99999")
	c.ExposedPorts = []int{8080}
	_, ds := Parser{}.Parse([]Container{c})
	var i002 *diagnostics.Diagnostic
	for i := range ds {
		if ds[i].Code == diagnostics.PortDefaulted {
			i002 = &ds[i]
		}
	}
	if i002 == nil || strings.Contains(i002.Message, "no port label") || !strings.Contains(i002.Message, "invalid port label (W001): using 8080") ||
		i002.Value != "99999" || i002.Key != "levee.http.app.port" {
		t.Fatalf("I002 %+v in %v", i002, ds)
	}
}
