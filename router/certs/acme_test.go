package certs

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
)

// A CA that refuses connections: the host gets W044 naming it, the CA's
// error and the next try; a wildcard host gets W045; a host with a static
// certificate is left to it. Nothing panics and the default certificate
// is served meanwhile.
func TestACMERefusingCAAndHostRules(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	c, k := ca.valid(t, "static.example.com")
	writeFile(t, dir, "static.crt", c)
	writeFile(t, dir, "static.key", k)
	store, err := New(Options{Dir: dir, Now: func() time.Time { return testNow }, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadCA := "https://" + ln.Addr().String() + "/dir"
	ln.Close() // nothing listens there now
	sink := &fakeSink{}
	reg := prometheus.NewRegistry()
	m, err := NewACME(ACMEOptions{CA: deadCA, Email: "ops@example.com", StorageDir: storageDir(t),
		HTTPPort: 1, TLSPort: 2, ListenHost: "127.0.0.1", Sink: sink, Logger: zerolog.Nop(), Registerer: reg}, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.SetHosts(ctx, []string{"shop.example.com", "*.wild.example.com", "static.example.com"})
	if !m.Manages("shop.example.com") || m.Manages("static.example.com") || m.Manages("*.wild.example.com") {
		t.Fatalf("managed set: shop %v static %v wildcard %v", m.Manages("shop.example.com"), m.Manages("static.example.com"), m.Manages("*.wild.example.com"))
	}
	var w044 diagnostics.Diagnostic
	deadline := time.Now().Add(30 * time.Second)
	for {
		var codes []string
		found := false
		for _, d := range sink.get() {
			codes = append(codes, string(d.Code)+" "+d.Value)
			if d.Code == diagnostics.ACMEFailed && d.Value == "shop.example.com" {
				w044, found = d, true
			}
		}
		if found && strings.Contains(strings.Join(codes, ","), "W045 *.wild.example.com") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("want W044 for shop.example.com and W045 for the wildcard, got %v", codes)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
	}
	for _, want := range []string{"shop.example.com", "challenge none", "connection refused", "next try"} {
		if !strings.Contains(w044.Message, want) {
			t.Errorf("W044 %q does not say %q", w044.Message, want)
		}
	}
	if got := served(t, store, "shop.example.com"); got != store.def {
		t.Error("a host without its certificate yet is not served the default certificate")
	}
	if got := served(t, store, "static.example.com"); got == store.def {
		t.Error("the static certificate is not served")
	}
	var shop *CertInfo
	for _, c := range store.Certificates() {
		if c.Host == "shop.example.com" {
			shop = &c
		}
	}
	if shop == nil || shop.Source != SourceACME || shop.LastError == "" || shop.NextRenewal.IsZero() {
		t.Errorf("GET /certificates entry for shop: %+v", shop)
	}
	if counter(t, reg, "levee_tls_acme_failures_total", map[string]string{"host": "shop.example.com"}) < 1 {
		t.Error("the failure is not counted")
	}

	// The route goes away: the host is no longer managed and its W044
	// resolves.
	m.SetHosts(ctx, nil)
	if m.Manages("shop.example.com") {
		t.Error("still managed")
	}
	for _, d := range sink.get() {
		if d.Code == diagnostics.ACMEFailed || d.Code == diagnostics.WildcardNeedsDNS {
			t.Errorf("still reported: %v", d)
		}
	}
}

func TestRetryWait(t *testing.T) {
	if retryWait(1) != time.Minute || retryWait(4) != 5*time.Minute || retryWait(100) != time.Hour || retryWait(0) != time.Minute {
		t.Error(retryWait(1), retryWait(4), retryWait(100))
	}
}
