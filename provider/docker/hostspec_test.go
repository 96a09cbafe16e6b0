package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseHostSpec(t *testing.T) {
	for _, tc := range []struct {
		in, name, url, err string
	}{
		{in: "unix:///var/run/docker.sock", name: "local", url: "unix:///var/run/docker.sock"},
		{in: "edge2=tcp://10.0.0.2:2376", name: "edge2", url: "tcp://10.0.0.2:2376"},
		{in: " b_1=https://docker.lan:2376 ", name: "b_1", url: "https://docker.lan:2376"},
		{in: "Edge=tcp://10.0.0.2:2376", err: "lower-case"},
		{in: "=tcp://10.0.0.2:2376", err: "must be 1-63"},
		{in: "edge2=/var/run/docker.sock", err: "no scheme"},
		{in: "edge2=ssh://admin@10.0.0.2", name: "edge2", url: "ssh://admin@10.0.0.2"},
		{in: "edge2=ssh:///var/run/docker.sock", err: "ssh:// needs a host"},
		{in: "edge2=tcp://:2376", err: "needs a host"},
		{in: "edge2=unix://", err: "socket's path"},
		{in: "edge2=ftp://x", err: `unknown scheme "ftp"`},
		{in: "edge2=tcp://10.0.0.2:2376/%zz", err: "not a URL"},
	} {
		got, err := ParseHostSpec(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseHostSpec(%q) = %+v, %v; want error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got.Name != tc.name || got.URL != tc.url {
			t.Errorf("ParseHostSpec(%q) = %+v, %v; want %s=%s", tc.in, got, err, tc.name, tc.url)
		}
	}
}

func TestParseTLSDir(t *testing.T) {
	dir := t.TempDir()
	for _, f := range tlsFiles {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if name, d, err := ParseTLSDir("edge2=" + dir); err != nil || name != "edge2" || d != dir {
		t.Errorf("ParseTLSDir = %s, %s, %v", name, d, err)
	}
	if name, _, err := ParseTLSDir(dir); err != nil || name != LocalHostName {
		t.Errorf("ParseTLSDir(dir) = %s, %v; want the local host", name, err)
	}
	os.Remove(filepath.Join(dir, "key.pem"))
	if _, _, err := ParseTLSDir("edge2=" + dir); err == nil || !strings.Contains(err.Error(), "key.pem") {
		t.Errorf("missing key.pem: err = %v", err)
	}
	if _, _, err := ParseTLSDir("Bad=" + dir); err == nil {
		t.Error("bad name accepted")
	}
}

func TestResolveHosts(t *testing.T) {
	a := HostSpec{Name: "a", URL: "unix:///a.sock"}
	b := HostSpec{Name: "b", URL: "tcp://10.0.0.2:2376"}
	got, err := ResolveHosts([]HostSpec{a, b}, map[string]string{"b": "/certs/b"}, map[string]string{"a": "10.0.0.9"})
	if err != nil || len(got) != 2 || got[1].TLSDir != "/certs/b" || got[0].TLSDir != "" || got[0].Addr != "10.0.0.9" || got[1].Addr != "" {
		t.Errorf("ResolveHosts = %+v, %v", got, err)
	}
	if _, err := ResolveHosts([]HostSpec{a, a}, nil, nil); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate: err = %v", err)
	}
	if _, err := ResolveHosts([]HostSpec{a}, map[string]string{"c": "/x"}, nil); err == nil || !strings.Contains(err.Error(), "--docker-tls-dir names host c") {
		t.Errorf("TLS dir of no host: err = %v", err)
	}
	if _, err := ResolveHosts([]HostSpec{a}, nil, map[string]string{"c": "10.0.0.9"}); err == nil || !strings.Contains(err.Error(), "--docker-host-address names host c") {
		t.Errorf("address of no host: err = %v", err)
	}
}

func TestParseHostAddr(t *testing.T) {
	for in, want := range map[string]string{"edge2=10.0.0.2": "10.0.0.2", "edge2=fd00::2": "fd00::2", "edge2=edge2.lan": "edge2.lan"} {
		if name, addr, err := ParseHostAddr(in); err != nil || name != "edge2" || addr != want {
			t.Errorf("ParseHostAddr(%q) = %s, %s, %v", in, name, addr, err)
		}
	}
	for _, in := range []string{"10.0.0.2", "edge2=", "edge2=10.0.0.2:2376", "Edge=10.0.0.2", "edge2=tcp://x"} {
		if _, _, err := ParseHostAddr(in); err == nil {
			t.Errorf("ParseHostAddr(%q) accepted", in)
		}
	}
}

func TestHostAddress(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://10.0.0.2:2376": "10.0.0.2", "https://[fd00::2]:2376": "fd00::2", "tcp://edge.lan:2375": "edge.lan",
		"unix:///var/run/docker.sock": "",
	} {
		if got := hostAddress(in); got != want {
			t.Errorf("hostAddress(%q) = %q, want %q", in, got, want)
		}
	}
}

// --docker-host-weight takes name=weight, 1 to MaxHostWeight; anything
// else is an error naming the value; a weight naming no host is refused.
func TestParseHostWeight(t *testing.T) {
	if name, w, err := ParseHostWeight("edge2=3"); err != nil || name != "edge2" || w != 3 {
		t.Errorf("edge2=3: %q %d %v", name, w, err)
	}
	for _, bad := range []string{"3", "edge2=", "edge2=0", "edge2=-1", "edge2=1.5", "edge2=101", "Edge2=3", "edge2=three"} {
		if _, _, err := ParseHostWeight(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("ParseHostWeight(%q) = %v, want an error naming it", bad, err)
		}
	}
	hosts := []HostSpec{{Name: "a"}, {Name: "b"}}
	got, err := ApplyHostWeights(hosts, map[string]int{"b": 4})
	if err != nil || got[0].Weight != 0 || got[1].Weight != 4 || hosts[1].Weight != 0 {
		t.Errorf("ApplyHostWeights = %+v, %v (input %+v)", got, err, hosts)
	}
	if _, err := ApplyHostWeights(hosts, map[string]int{"c": 2}); err == nil || !strings.Contains(err.Error(), "--docker-host-weight names host c") {
		t.Errorf("weight of no host: %v", err)
	}
}
