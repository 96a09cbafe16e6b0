package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
)

// hostsEngine answers listContainers with each host's containers by name,
// and records the specs it was asked for.
func hostsEngine(byHost map[string][]labels.Container, asked *[]docker.HostSpec) engineReader {
	eng := testEngine()
	eng.listServices = func(context.Context, docker.HostSpec) ([]labels.Container, error) {
		return nil, errors.New("several hosts have no Swarm services")
	}
	eng.listContainers = func(_ context.Context, spec docker.HostSpec) ([]labels.Container, error) {
		*asked = append(*asked, spec)
		cs, ok := byHost[spec.Name]
		if !ok {
			return nil, errors.New("connection refused")
		}
		return cs, nil
	}
	return eng
}

func shopReplica(id, name string, published map[int]int, extra map[string]string) labels.Container {
	l := map[string]string{"levee.enable": "true", "levee.http.shop.host": "shop.com", "levee.http.shop.port": "8080"}
	for k, v := range extra {
		l[k] = v
	}
	return labels.Container{ID: id, Name: name, Labels: l, PublishedPorts: published,
		Networks: []labels.Network{{Name: "bridge", ID: "net-" + id, IP: "172.17.0.2"}}}
}

// validate against several hosts reads each with its TLS directory, names
// every container host/container, and merges replicas of one route over
// the hosts as serve does: the local replica at its own address, the
// remote one at its host's address and published port; a remote replica
// that publishes nothing is skipped with W087 naming its host.
func TestValidateSeveralHosts(t *testing.T) {
	certs := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(certs, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	byHost := map[string][]labels.Container{
		"a": {shopReplica("a1", "shop-1", nil, nil)},
		"b": {
			shopReplica("b1", "shop-1", map[int]int{8080: 18080}, nil),
			shopReplica("b2", "shop-2", nil, nil),
			{ID: "b3", Name: "db", Labels: map[string]string{"levee.enable": "true", "levee.http.db.host": "db.com", "levee.http.db.port": "eighty"},
				Networks: []labels.Network{{Name: "bridge", IP: "172.17.0.9"}}},
		},
	}
	var asked []docker.HostSpec
	eng := hostsEngine(byHost, &asked)
	out, errOut, code := validateWith(t, eng, nil, "--docker-host", "a=unix:///var/run/docker.sock",
		"--docker-host", "b=tcp://10.0.0.2:2376", "--docker-tls-dir", "b="+certs, "--format", "json")
	if code != 1 {
		t.Fatalf("exit %d (want 1: b/shop-2 is skipped), stderr %q\n%s", code, errOut, out)
	}
	if len(asked) != 2 || asked[0].Name != "a" || asked[1].Name != "b" || asked[1].TLSDir != certs || asked[0].TLSDir != "" {
		t.Errorf("hosts read: %+v", asked)
	}
	var rep validateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	rows := map[string]serviceReport{}
	for _, r := range rep.Services {
		rows[r.Container] = r
	}
	a, b := rows["a/shop-1"], rows["b/shop-1"]
	if a.Status != statusRouted || b.Status != statusRouted || a.Entrypoint == "" || a.Entrypoint != b.Entrypoint {
		t.Errorf("replicas on a and b must be one routed route: %+v, %+v", a, b)
	}
	if a.Backend != "172.17.0.2:8080" || b.Backend != "10.0.0.2:18080" {
		t.Errorf("backends: a %q (want its own address), b %q (want the host's address and published port)", a.Backend, b.Backend)
	}
	s2 := rows["b/shop-2"]
	if s2.Status != statusSkipped || !hasCode(s2, "W087") || !strings.Contains(diagText(s2), "Docker host b") {
		t.Errorf("b/shop-2: %+v", s2)
	}
	if db := rows["b/db"]; db.Status != statusSkipped || len(db.Diagnostics) == 0 {
		t.Errorf("b/db: %+v", db)
	}
	for _, d := range rows["b/db"].Diagnostics {
		if d.Source.ObjectName != "b/db" {
			t.Errorf("diagnostic of b/db names %q", d.Source.ObjectName)
		}
	}

	// A host that cannot be read stops the check, naming it.
	delete(byHost, "b")
	asked = nil
	_, errOut, code = validateWith(t, eng, nil, "--docker-host", "a=unix:///var/run/docker.sock", "--docker-host", "b=tcp://10.0.0.2:2376")
	if code != 2 || !strings.Contains(errOut, "Docker host b (tcp://10.0.0.2:2376): connection refused") {
		t.Errorf("unreadable host: exit %d, %q", code, errOut)
	}
}

// The host flags are serve's: LEVEE_DOCKER_HOST takes several, a name
// given twice, an address naming no host or an unknown scheme is a usage
// error, as for serve.
func TestValidateSeveralHostsFlags(t *testing.T) {
	var asked []docker.HostSpec
	eng := hostsEngine(map[string][]labels.Container{"a": nil, "b": nil}, &asked)
	env := map[string]string{"LEVEE_DOCKER_HOST": "a=unix:///var/run/docker.sock,b=tcp://10.0.0.2:2376"}
	if _, errOut, code := validateWith(t, eng, env); code != 0 || len(asked) != 2 {
		t.Errorf("LEVEE_DOCKER_HOST with two hosts: exit %d, %q, read %+v", code, errOut, asked)
	}
	for _, args := range [][]string{
		{"--docker-host", "a=tcp://h:1", "--docker-host", "a=tcp://h:2"},
		{"--docker-host", "a=tcp://h:1", "--docker-host-address", "c=10.0.0.3"},
		{"--docker-host", "a=ftp://h"},
	} {
		if _, errOut, code := validateWith(t, eng, nil, args...); code != 2 || !strings.Contains(errOut, "levee validate") {
			t.Errorf("%v: exit %d, %q; want a usage error", args, code, errOut)
		}
	}
}

// One engine given with a TLS directory is read with it, its containers
// and its Swarm services, as one engine (no host in the rows).
func TestValidateOneHostWithTLSDir(t *testing.T) {
	certs := t.TempDir()
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		if err := os.WriteFile(filepath.Join(certs, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var asked []docker.HostSpec
	eng := testEngine()
	eng.listContainers = func(_ context.Context, spec docker.HostSpec) ([]labels.Container, error) {
		asked = append(asked, spec)
		return []labels.Container{shopReplica("a1", "shop-1", nil, nil)}, nil
	}
	eng.listServices = func(_ context.Context, spec docker.HostSpec) ([]labels.Container, error) {
		asked = append(asked, spec)
		return nil, nil
	}
	out, errOut, code := validateWith(t, eng, nil, "--docker-host", "tcp://10.0.0.2:2376", "--docker-tls-dir", certs)
	if code != 0 || !strings.Contains(out, "shop-1") || strings.Contains(out, "local/") {
		t.Errorf("exit %d, %q\n%s", code, errOut, out)
	}
	if len(asked) != 2 || asked[0].TLSDir != certs || asked[1].TLSDir != certs || asked[0].URL != "tcp://10.0.0.2:2376" {
		t.Errorf("engine read with %+v, want the URL and TLS directory for containers and services", asked)
	}
}

func hasCode(r serviceReport, code string) bool {
	for _, d := range r.Diagnostics {
		if string(d.Code) == code {
			return true
		}
	}
	return false
}

func diagText(r serviceReport) string {
	var b strings.Builder
	for _, d := range r.Diagnostics {
		b.WriteString(d.Message + "\n")
	}
	return b.String()
}
