package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router/certs"
)

func TestTLSCertFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want []certs.FilePair
	}{
		{"none", nil, nil, nil},
		{"pairs", []string{"--tls-cert", "/le/fullchain.pem,/le/privkey.pem", "--tls-cert", "/certs/both.pem"}, nil,
			[]certs.FilePair{{Cert: "/le/fullchain.pem", Key: "/le/privkey.pem"}, {Cert: "/certs/both.pem"}}},
		{"environment", nil, map[string]string{"LEVEE_TLS_CERT": "/a.crt,/a.key; /b.pem"},
			[]certs.FilePair{{Cert: "/a.crt", Key: "/a.key"}, {Cert: "/b.pem"}}},
		{"a path with a space", []string{"--tls-cert", "/my certs/a.crt,/my certs/a.key"}, nil,
			[]certs.FilePair{{Cert: "/my certs/a.crt", Key: "/my certs/a.key"}}},
		{"flag beats environment", []string{"--tls-cert", "/a.pem"}, map[string]string{"LEVEE_TLS_CERT": "/b.pem"},
			[]certs.FilePair{{Cert: "/a.pem"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseServeFlags(c.args, envOf(c.env), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.TLSCerts, c.want) {
				t.Errorf("got %+v, want %+v", cfg.TLSCerts, c.want)
			}
		})
	}
}

func TestTLSCertFlagErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--tls-cert", ""},
		{"--tls-cert", "a.crt,a.key,extra"},
		{"--tls-cert", ",a.key"},
		{"--tls-cert", "a.crt,"},
	} {
		_, err := parseServeFlags(args, envOf(nil), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "CERT[,KEY]") {
			t.Errorf("%q: error %v, want it to name CERT[,KEY]", args, err)
		}
	}
}
