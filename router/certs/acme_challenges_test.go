package certs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/libdns/libdns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
)

func TestParseChallenges(t *testing.T) {
	got, err := ParseChallenges(" DNS-01, tls-alpn-01 ,http-01")
	if err != nil || !slices.Equal(got, []string{"dns-01", "tls-alpn-01", "http-01"}) {
		t.Errorf("got %v %v", got, err)
	}
	if got, err := ParseChallenges(""); err != nil || got != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	for in, want := range map[string]string{
		"http-01,dns-02": `"dns-02": want tls-alpn-01, http-01 or dns-01`,
		"dns-01,dns-01":  "dns-01 is named twice",
		" , ":            "no challenge named",
	} {
		if _, err := ParseChallenges(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

// refusingDNS is a DNS provider whose server refuses every update.
type refusingDNS struct{}

func (refusingDNS) AppendRecords(context.Context, string, []libdns.Record) ([]libdns.Record, error) {
	return nil, errors.New(`dns response error code "REFUSED" (5)`)
}

func (refusingDNS) DeleteRecords(context.Context, string, []libdns.Record) ([]libdns.Record, error) {
	return nil, nil
}

func newTestACME(t *testing.T, opts ACMEOptions) (*ACME, *Store, error) {
	t.Helper()
	store, err := New(Options{Now: func() time.Time { return testNow }, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	opts.CA, opts.Email, opts.StorageDir = "https://127.0.0.1:1/dir", "ops@example.com", storageDir(t)
	opts.Logger, opts.Registerer = zerolog.Nop(), prometheus.NewRegistry()
	m, err := NewACME(opts, store)
	if err == nil {
		t.Cleanup(m.Stop)
	}
	return m, store, err
}

// storageDir is a temporary certmagic storage directory, removed when the
// test ends. Stop cancels the orders but does not wait for certmagic's
// workers, which may still write a lock file as they leave; the removal is
// retried until the directory is gone (t.TempDir's single attempt fails
// the test on such a late file).
func storageDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "levee-acme-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("remove the ACME storage %s: %v", dir, err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	return dir
}

// Each challenge of the list is one issuer, in the list's order; DNS-01
// also issues the wildcards; a challenge without what it needs is a
// start-up error.
func TestPlanChallenges(t *testing.T) {
	dns := &DNSOptions{Name: "test", Provider: refusingDNS{}}
	kinds := func(is []certmagic.Issuer) []string {
		var out []string
		for _, i := range is {
			a := i.(*certmagic.ACMEIssuer)
			out = append(out, fmt.Sprintf("http=%v,alpn=%v,dns=%v", !a.DisableHTTPChallenge, !a.DisableTLSALPNChallenge, a.DNS01Solver != nil))
		}
		return out
	}
	m, _, err := newTestACME(t, ACMEOptions{HTTPPort: 1, TLSPort: 2, DNS: dns, Challenges: []string{"tls-alpn-01", "dns-01", "http-01"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http=false,alpn=true,dns=false", "http=false,alpn=false,dns=true", "http=true,alpn=false,dns=false"}
	if got := kinds(m.cfg.Issuers); !slices.Equal(got, want) {
		t.Errorf("issuers %v, want %v", got, want)
	}
	if m.wildCfg == nil || !slices.Equal(kinds(m.wildCfg.Issuers), want[1:2]) {
		t.Errorf("wildcard issuers %v", m.wildCfg)
	}
	if m.http != m.cfg.Issuers[2] {
		t.Error("HTTP-01 is not answered by the http-01 issuer")
	}
	// A DNS provider and no list: DNS-01 alone.
	m, _, err = newTestACME(t, ACMEOptions{HTTPPort: 1, TLSPort: 2, DNS: dns})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(m.cfg.Issuers); !slices.Equal(got, want[1:2]) || m.http != nil {
		t.Errorf("issuers %v, HTTP-01 answered %v", got, m.http != nil)
	}
	// Neither: today's one issuer with both listeners' challenges.
	m, _, err = newTestACME(t, ACMEOptions{HTTPPort: 1, TLSPort: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(m.cfg.Issuers); !slices.Equal(got, []string{"http=true,alpn=true,dns=false"}) || m.wildCfg != nil {
		t.Errorf("issuers %v, wildcard config %v", got, m.wildCfg)
	}
	for _, tc := range []struct {
		opts ACMEOptions
		want string
	}{
		{ACMEOptions{HTTPPort: 1, TLSPort: 2, Challenges: []string{"dns-01"}}, "--acme-challenges: the dns-01 challenge needs a DNS provider (--acme-dns-provider)"},
		{ACMEOptions{TLSPort: 2, Challenges: []string{"http-01"}}, "the http-01 challenge needs a plain listener"},
		{ACMEOptions{HTTPPort: 1, Challenges: []string{"tls-alpn-01"}}, "the tls-alpn-01 challenge needs a TLS listener"},
	} {
		if _, _, err := newTestACME(t, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.opts.Challenges, err, tc.want)
		}
	}
}

// With DNS-01 a wildcard host is managed, without W045, and covers its
// sub-domains one label deep; without it, W045 as before.
func TestWildcardWithDNS01(t *testing.T) {
	sink := &fakeSink{}
	m, _, err := newTestACME(t, ACMEOptions{TLSPort: 2, DNS: &DNSOptions{Name: "test", Provider: refusingDNS{}}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.SetHosts(ctx, []string{"*.wild.example.com", "*.com"})
	for name, want := range map[string]bool{
		"*.wild.example.com": true, "a.wild.example.com": true,
		"wild.example.com": false, "a.b.wild.example.com": false, "*.com": false, "x.com": false,
	} {
		if got := m.Manages(name); got != want {
			t.Errorf("Manages(%q) = %v, want %v", name, got, want)
		}
	}
	if got := m.configFor("*.wild.example.com"); got != m.wildCfg {
		t.Error("the wildcard is not ordered through the DNS-01 configuration")
	}
	for _, d := range sink.get() {
		if d.Code == diagnostics.WildcardNeedsDNS {
			t.Errorf("W045 with DNS-01 on: %v", d)
		}
	}
}

// A refused update is W044 naming dns-01 and the provider, with the
// DNS hint; this part needs no CA: the error is what certmagic reports.
func TestDNSFailureDiagnostic(t *testing.T) {
	err := fmt.Errorf("[*.x.example.com] Obtain: presenting for challenge: %w", &dnsError{provider: "rfc2136", err: errors.New(`dns response error code "NOTAUTH" (9)`)})
	if got := challengesOf(err); got != "dns-01 (the record was not published through rfc2136)" {
		t.Errorf("challenge %q", got)
	}
	if got := caError(err); !strings.Contains(got, "NOTAUTH") || !strings.Contains(got, "dns-01 through rfc2136") {
		t.Errorf("error %q", got)
	}
	if h := failureHint("*.x.example.com", challengesOf(err)); !strings.Contains(h, "_acme-challenge.x.example.com") {
		t.Errorf("hint %q", h)
	}
}
