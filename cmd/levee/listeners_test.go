package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router"
)

func TestListenFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want []listenerSpec
	}{
		{"default", nil, nil, []listenerSpec{{Name: "web", Addr: ":8080"}}},
		{"http-listen", []string{"--http-listen", ":80"}, nil, []listenerSpec{{Name: "web", Addr: ":80"}}},
		{"listen replaces the default", []string{"--listen", "web=:80", "--listen", "websecure=:443,tls"}, nil,
			[]listenerSpec{{Name: "web", Addr: ":80"}, {Name: "websecure", Addr: ":443", TLS: true}}},
		{"explicit http-listen is kept", []string{"--http-listen", ":81", "--listen", "websecure=127.0.0.1:443,tls"}, nil,
			[]listenerSpec{{Name: "web", Addr: ":81"}, {Name: "websecure", Addr: "127.0.0.1:443", TLS: true}}},
		{"environment", nil, map[string]string{"LEVEE_LISTEN": "web=:80; websecure=:443,tls"},
			[]listenerSpec{{Name: "web", Addr: ":80"}, {Name: "websecure", Addr: ":443", TLS: true}}},
		{"environment http-listen counts as given", nil, map[string]string{"LEVEE_LISTEN": "admin=:9000", "LEVEE_HTTP_LISTEN": ":81"},
			[]listenerSpec{{Name: "web", Addr: ":81"}, {Name: "admin", Addr: ":9000"}}},
		{"timeouts", []string{"--listen", "web=:80,idle-timeout=30s", "--listen", "websecure=:443,tls,header-timeout=5s"}, nil,
			[]listenerSpec{{Name: "web", Addr: ":80", IdleTimeout: 30 * time.Second}, {Name: "websecure", Addr: ":443", TLS: true, HeaderTimeout: 5 * time.Second}}},
		{"public port", []string{"--listen", "web=:80", "--listen", "websecure=:443,public-port=41443,tls"}, nil,
			[]listenerSpec{{Name: "web", Addr: ":80"}, {Name: "websecure", Addr: ":443", TLS: true, PublicPort: 41443}}},
		{"h2c", []string{"--listen", "grpc=:50051,h2c"}, nil, []listenerSpec{{Name: "grpc", Addr: ":50051", H2C: true}}},
		{"h3", []string{"--listen", "websecure=:8443,tls,h3,public-port=443"}, nil,
			[]listenerSpec{{Name: "websecure", Addr: ":8443", TLS: true, H3: true, PublicPort: 443}}},
		{"h3 with 0-RTT", []string{"--listen", "websecure=:8443,tls,h3,0rtt"}, nil,
			[]listenerSpec{{Name: "websecure", Addr: ":8443", TLS: true, H3: true, ZeroRTT: true}}},
		{"tcp listener", []string{"--listen", "web=:80", "--listen", "postgres=:5432,tcp"}, nil,
			[]listenerSpec{{Name: "web", Addr: ":80"}, {Name: "postgres", Addr: ":5432", TCP: true}}},
		{"proxy-protocol on any listener", []string{"--trusted-proxies", "10.0.0.0/8", "--listen", "web=:80,proxy-protocol", "--listen", "websecure=:443,tls,proxy-protocol", "--listen", "pg=:5432,tcp,proxy-protocol"}, nil,
			[]listenerSpec{{Name: "web", Addr: ":80", ProxyProtocol: true}, {Name: "websecure", Addr: ":443", TLS: true, ProxyProtocol: true}, {Name: "pg", Addr: ":5432", TCP: true, ProxyProtocol: true}}},
		{"udp listener", []string{"--listen", "dns=:5353,udp"}, nil, []listenerSpec{{Name: "dns", Addr: ":5353", UDP: true}}},
		{"flag beats environment", []string{"--listen", "a=:1"}, map[string]string{"LEVEE_LISTEN": "b=:2"},
			[]listenerSpec{{Name: "a", Addr: ":1"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseServeFlags(c.args, envOf(c.env), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cfg.listeners()
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v (%v), want %+v", got, err, c.want)
			}
		})
	}
}

func TestListenFlagErrors(t *testing.T) {
	cases := map[string][]string{
		"want name=addr":         {"--listen", ":80"},
		"unknown option":         {"--listen", "web=:80,h2"},
		"want host:port":         {"--listen", "web=80"},
		"the name of":            {"--listen", "Web Secure=:443"},
		"public-port wants":      {"--listen", "websecure=:443,tls,public-port=0"},
		"from 1 to 65535":        {"--listen", "websecure=:443,tls,public-port=70000"},
		"add tls":                {"--listen", "web=:80,public-port=8080"},
		"serves h2 by ALPN":      {"--listen", "websecure=:443,tls,h2c"},
		"declared twice":         {"--listen", "a=:1", "--listen", "a=:2"},
		"tcp listener takes no":  {"--listen", "pg=:5432,tcp,tls"},
		"which is always TLS":    {"--listen", "web=:80,h3"},
		"takes no other option":  {"--listen", "pg=:5432,tcp,h3"},
		"--http-listen declares": {"--http-listen", ":1", "--listen", "web=:2"},
		"none is given":          {"--listen", "web=:80,proxy-protocol"},
		"udp listener takes no":  {"--listen", "dns=:53,udp,tcp"},
		"QUIC side":              {"--trusted-proxies", "10.0.0.1", "--listen", "websecure=:443,tls,h3,proxy-protocol"},
		"add h3":                 {"--listen", "websecure=:443,tls,0rtt"},
	}
	for want, args := range cases {
		_, err := parseServeFlags(args, envOf(nil), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want it to say %q", args, err, want)
		}
	}
}

// A plain listener knows the TLS listeners, in order, each with its
// public port: the option's, else its address's.
func TestRouterListeners(t *testing.T) {
	ls := routerListeners([]listenerSpec{{Name: "web", Addr: ":80"}, {Name: "websecure", Addr: ":8443", TLS: true},
		{Name: "other", Addr: ":443", TLS: true, PublicPort: 41443}})
	web, websecure, other := ls[0], ls[1], ls[2]
	if web.TLS || !websecure.TLS || !other.TLS || web.Name != "web" || other.Name != "other" {
		t.Fatalf("%+v %+v %+v", web, websecure, other)
	}
	if len(web.TLSListeners) != 2 || web.TLSListeners[0] != websecure || web.TLSListeners[1] != other {
		t.Errorf("web redirects to %+v, want websecure then other", web.TLSListeners)
	}
	if websecure.PublicPort != 8443 || other.PublicPort != 41443 || len(websecure.TLSListeners) != 0 {
		t.Errorf("public ports %d %d, want 8443 41443", websecure.PublicPort, other.PublicPort)
	}
}

// The listener's timeouts and the server choice reach its servers'
// options (router/httpx/front applies them to every server kind), and
// its requests find the listener.
func TestListenerTimeoutsReachTheServer(t *testing.T) {
	spec := listenerSpec{Name: "web", HeaderTimeout: 3 * time.Second, IdleTimeout: 7 * time.Second}
	l := routerListeners([]listenerSpec{spec})[0]
	for _, kind := range []string{"levee", "stdlib"} {
		o := frontOptions(kind, nil, spec, l, nil, time.Minute, nil)
		if o.Limits.HeaderTimeout != 3*time.Second || o.Limits.IdleTimeout != 7*time.Second || o.Limits.WriteTimeout != time.Minute || o.Limits.MaxHeaderBytes != proxyMaxHeaderBytes {
			t.Errorf("%s: limits %+v", kind, o.Limits)
		}
		if o.Stdlib != (kind == "stdlib") {
			t.Errorf("%s: Stdlib %v", kind, o.Stdlib)
		}
		if router.ListenerOf(o.Base) != l {
			t.Errorf("%s: the base context does not carry the listener", kind)
		}
	}
	if d := (listenerSpec{}); d.headerTimeout() != proxyReadHeaderTimeout || d.idleTimeout() != proxyIdleTimeout {
		t.Error("defaults")
	}
}

// The flag's String form parses back to the same listeners, h3 included.
func TestListenFlagStringRoundTrips(t *testing.T) {
	specs := []listenerSpec{{Name: "websecure", Addr: ":8443", TLS: true, H3: true, PublicPort: 443, IdleTimeout: time.Minute}}
	var back []listenerSpec
	if err := (listenFlag{&back}).Set(listenFlag{&specs}.String()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, specs) {
		t.Errorf("%q parsed back as %+v, want %+v", listenFlag{&specs}.String(), back, specs)
	}
}
