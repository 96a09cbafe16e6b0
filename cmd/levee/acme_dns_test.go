package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/libdns/rfc2136"
)

func TestACMEDNSFlagErrorsNameTheInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--acme-dns-provider", "gandi"}, `--acme-dns-provider (LEVEE_ACME_DNS_PROVIDER) "gandi": want one of cloudflare, rfc2136, route53`},
		{[]string{"--acme-challenges", "http-01,dns-1"}, `--acme-challenges (LEVEE_ACME_CHALLENGES): "dns-1": want`},
		{[]string{"--acme-challenges", "tls-alpn-01,dns-01"}, "names dns-01: it needs --acme-dns-provider"},
		{[]string{"--acme-dns-resolvers", "127.0.0.1:53,ns1/x"}, `--acme-dns-resolvers (LEVEE_ACME_DNS_RESOLVERS): "ns1/x" is not host[:port]`},
		{[]string{"--acme-dns-propagation-timeout", "-1s"}, "--acme-dns-propagation-timeout (LEVEE_ACME_DNS_PROPAGATION_TIMEOUT) -1s: must not be negative"},
	} {
		_, err := parseServeFlags(tc.args, envOf(nil), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	cfg, err := parseServeFlags([]string{"--acme-dns-provider", "rfc2136", "--acme-challenges", "dns-01,http-01", "--acme-dns-resolvers", "127.0.0.1:5353, ns1.example.com"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := cfg.dnsResolvers(); strings.Join(r, " ") != "127.0.0.1:5353 ns1.example.com:53" {
		t.Errorf("resolvers %v", r)
	}
	if cfg.ACMEDNSPropagationTimeout != 2*time.Minute {
		t.Errorf("propagation timeout default %s", cfg.ACMEDNSPropagationTimeout)
	}
}

// The provider is built from the environment serve was given: a missing
// credential names its variable; a key file is read; 0 turns the
// propagation check off.
func TestACMEDNSOptionsFromEnv(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--acme-dns-provider", "rfc2136"}, envOf(map[string]string{"LEVEE_RFC2136_SERVER": "127.0.0.1:5353"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.dnsOptions(context.Background()); err == nil || !strings.Contains(err.Error(), "--acme-dns-provider: DNS provider rfc2136: LEVEE_RFC2136_KEY (or LEVEE_RFC2136_KEY_FILE): not set") {
		t.Errorf("error %v", err)
	}
	key := filepath.Join(t.TempDir(), "levee.key")
	if err := os.WriteFile(key, []byte("key \"levee\" {\n\talgorithm hmac-sha256;\n\tsecret \"c2VjcmV0\";\n};\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err = parseServeFlags([]string{"--acme-dns-provider", "rfc2136", "--acme-dns-propagation-timeout", "0"},
		envOf(map[string]string{"LEVEE_RFC2136_SERVER": "127.0.0.1:5353", "LEVEE_RFC2136_KEY_FILE": key}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	dns, err := cfg.dnsOptions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	p := dns.Provider.(*rfc2136.Provider)
	if p.KeyName != "levee" || p.Key != "c2VjcmV0" || p.Server != "127.0.0.1:5353" || dns.PropagationTimeout >= 0 {
		t.Errorf("provider %+v, propagation timeout %s", p, dns.PropagationTimeout)
	}
}
