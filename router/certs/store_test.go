package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/diagnostics"
)

func newTestStore(t *testing.T, dir string, sink Sink) *Store {
	t.Helper()
	opts := Options{Dir: dir, Now: func() time.Time { return testNow }, Registerer: prometheus.NewRegistry()}
	if sink != nil {
		opts.Sink = sink
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func served(t *testing.T, s *Store, sni string) *tls.Certificate {
	t.Helper()
	conn, peer := net.Pipe() // certmagic logs the client's address
	defer conn.Close()
	defer peer.Close()
	c, err := s.GetCertificate(&tls.ClientHelloInfo{ServerName: sni, Conn: conn})
	if err != nil || c == nil {
		t.Fatalf("%q: %v", sni, err)
	}
	return c
}

// Certificates are chosen by SNI: exact names, then a wildcard one label
// up, else the default certificate.
func TestChooseBySNI(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	c, k := ca.valid(t, "shop.example.com", "www.shop.example.com")
	writeFile(t, dir, "shop.crt", c)
	writeFile(t, dir, "shop.key", k)
	c, k = ca.valid(t, "*.example.com")
	writeFile(t, dir, "wild.pem", append(c, k...)) // chain and key in one file
	s := newTestStore(t, dir, nil)
	cases := map[string]string{
		"shop.example.com":     "shop.example.com",
		"SHOP.Example.com.":    "shop.example.com",
		"www.shop.example.com": "shop.example.com",
		"blog.example.com":     "*.example.com",
		"example.com":          "default",
		"a.b.example.com":      "default",
		"":                     "default",
		"other.test":           "default",
	}
	for sni, want := range cases {
		got := served(t, s, sni)
		name := "default"
		if got != s.def {
			name = got.Leaf.DNSNames[0]
		}
		if name != want {
			t.Errorf("SNI %q: served %s, want %s", sni, name, want)
		}
	}
	if !s.HasStatic("blog.example.com") || s.HasStatic("example.com") {
		t.Error("HasStatic disagrees with the choice")
	}
	var hosts []string
	for _, c := range s.Certificates() {
		hosts = append(hosts, c.Host+"="+c.Source)
	}
	if want := []string{"*=default", "*.example.com=static", "shop.example.com=static", "www.shop.example.com=static"}; !slices.Equal(hosts, want) {
		t.Errorf("Certificates %v, want %v", hosts, want)
	}
}

// Each unusable file is one W043 naming it; the good pair still loads.
func TestBadCertificateFiles(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	good, goodKey := ca.valid(t, "good.example.com")
	writeFile(t, dir, "good.crt", good)
	writeFile(t, dir, "good.key", goodKey)
	_, otherKey := ca.valid(t, "other.example.com")
	writeFile(t, dir, "mismatch.crt", good)
	writeFile(t, dir, "mismatch.key", otherKey)
	writeFile(t, dir, "lonely.key", goodKey)
	writeFile(t, dir, "nokey.crt", good)
	old, oldKey := ca.leaf(t, testNow.AddDate(-1, 0, 0), testNow.AddDate(0, 0, -1), "old.example.com")
	writeFile(t, dir, "old.crt", old)
	writeFile(t, dir, "old.key", oldKey)
	bad, badKey := ca.valid(t, "not a host!")
	writeFile(t, dir, "badhost.crt", bad)
	writeFile(t, dir, "badhost.key", badKey)
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "dangling.crt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "garbage.crt", []byte("not PEM"))
	writeFile(t, dir, "garbage.key", goodKey)
	sink := &fakeSink{}
	s := newTestStore(t, dir, sink)
	want := map[string]string{
		"mismatch.crt": "private key does not match public key",
		"lonely.key":   "a key without a certificate",
		"nokey.crt":    "has no key",
		"old.crt":      "expired on",
		"badhost.crt":  "names no valid DNS name",
		"dangling.crt": "reading certificate",
		"garbage.crt":  "failed to find any PEM data",
	}
	got := map[string]string{}
	for _, d := range sink.get() {
		if d.Code != diagnostics.BadCertificate {
			t.Errorf("code %s", d.Code)
		}
		got[filepath.Base(d.Source.ObjectName)] = d.Message
	}
	for file, msg := range want {
		if !strings.Contains(got[file], msg) {
			t.Errorf("%s: %q, want it to say %q", file, got[file], msg)
		}
	}
	if len(got) != len(want) {
		t.Errorf("diagnostics for %v, want %d", got, len(want))
	}
	if c := served(t, s, "good.example.com"); c == s.def {
		t.Error("the good pair is not served")
	}
	if c := served(t, s, "old.example.com"); c != s.def {
		t.Error("an expired certificate is served")
	}
}

// A changed file is picked up by the next poll, and a fixed problem
// resolves its diagnostic.
func TestReloadOnChange(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	c1, k1 := ca.valid(t, "shop.example.com")
	writeFile(t, dir, "shop.crt", c1)
	sink := &fakeSink{}
	s := newTestStore(t, dir, sink)
	if len(sink.get()) != 1 || served(t, s, "shop.example.com") != s.def {
		t.Fatalf("a certificate without its key: %v", sink.get())
	}
	writeFile(t, dir, "shop.key", k1)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	first := served(t, s, "shop.example.com")
	if first == s.def || len(sink.get()) != 0 {
		t.Fatalf("after adding the key: default served or diagnostics %v", sink.get())
	}
	updates := sink.n
	if err := s.Reload(); err != nil || sink.n != updates {
		t.Fatalf("an unchanged directory reloaded (%v)", err)
	}
	c2, k2 := ca.valid(t, "shop.example.com")
	writeFile(t, dir, "shop.crt", c2)
	writeFile(t, dir, "shop.key", k2)
	future := time.Now().Add(time.Minute) // a new mtime even on coarse clocks
	_ = os.Chtimes(filepath.Join(dir, "shop.crt"), future, future)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if second := served(t, s, "shop.example.com"); second == first || second == s.def {
		t.Fatal("the renewed certificate is not served")
	}
}

// Run polls the directory.
func TestRunPolls(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, PollInterval: 10 * time.Millisecond, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := contextWithCancel(t)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	c, k := ca.valid(t, "late.example.com")
	writeFile(t, dir, "late.key", k)
	writeFile(t, dir, "late.crt", c)
	deadline := time.Now().Add(10 * time.Second)
	for served(t, s, "late.example.com") == s.def {
		if time.Now().After(deadline) {
			t.Fatal("a new certificate was not picked up")
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	cancel()
	<-done
}

// The default certificate: from files when given (both or neither), else
// generated, ECDSA P-256, in memory only.
func TestDefaultCertificate(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	c, k := ca.valid(t, "fallback.example.com")
	writeFile(t, dir, "d.crt", c)
	writeFile(t, dir, "d.key", k)
	s, err := New(Options{DefaultCert: filepath.Join(dir, "d.crt"), DefaultKey: filepath.Join(dir, "d.key"), Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if got := served(t, s, "x.test"); got.Leaf.DNSNames[0] != "fallback.example.com" {
		t.Errorf("default from files: %v", got.Leaf.DNSNames)
	}
	if _, err := New(Options{DefaultCert: filepath.Join(dir, "d.crt")}); err == nil || !strings.Contains(err.Error(), "go together") {
		t.Errorf("cert without key: %v", err)
	}
	if _, err := New(Options{DefaultCert: filepath.Join(dir, "d.crt"), DefaultKey: filepath.Join(dir, "missing.key")}); err == nil || !strings.Contains(err.Error(), "missing.key") {
		t.Errorf("missing key file: %v", err)
	}
	empty := t.TempDir()
	s, err = New(Options{Dir: empty})
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := s.def.PrivateKey.(*ecdsa.PrivateKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("generated default: %T, want ECDSA P-256", s.def.PrivateKey)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("the generated certificate was written: %v", entries)
	}
}

func TestHandshakeReasons(t *testing.T) {
	cases := map[string]string{
		"EOF": "eof",
		"tls: client offered only unsupported versions: [302 301]": "version",
		"tls: no cipher suite supported by both client and server": "cipher",
		"read tcp 1.2.3.4:443->5.6.7.8:1: i/o timeout":             "timeout",
		"remote error: tls: bad certificate":                       "certificate",
		"tls: unsupported protocol version":                        "version",
	}
	for msg, want := range cases {
		if got := HandshakeReason(msg); got != want {
			t.Errorf("%q: %s, want %s", msg, got, want)
		}
	}
}

func BenchmarkGetCertificate(b *testing.B) {
	ca := newTestCA(b)
	dir := b.TempDir()
	for i := range 100 {
		c, k := ca.valid(b, fmt.Sprintf("host-%d.example.com", i))
		writeFile(b, dir, fmt.Sprintf("h%d.crt", i), c)
		writeFile(b, dir, fmt.Sprintf("h%d.key", i), k)
	}
	c, k := ca.valid(b, "*.wild.example.com")
	writeFile(b, dir, "wild.crt", c)
	writeFile(b, dir, "wild.key", k)
	s, err := New(Options{Dir: dir, Now: func() time.Time { return testNow }})
	if err != nil {
		b.Fatal(err)
	}
	for _, sni := range []string{"host-42.example.com", "a.wild.example.com", "unknown.test"} {
		b.Run(sni, func(b *testing.B) {
			hello := &tls.ClientHelloInfo{ServerName: sni}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.GetCertificate(hello); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// A directory whose files are links into a directory swapped whole, as a
// Kubernetes secret or config map is mounted (name.crt -> ..data/name.crt,
// ..data -> a timestamped directory, replaced by renaming a new link over
// it): the links themselves never change, so the reload must look at the
// files they point to.
func TestReloadFollowsLinks(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	version := func(name string) {
		t.Helper()
		c, k := ca.valid(t, "shop.example.com")
		if err := os.Mkdir(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, name), "shop.crt", c)
		writeFile(t, filepath.Join(dir, name), "shop.key", k)
		if err := os.Symlink(name, filepath.Join(dir, "..data_tmp")); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version("..2026_06_01_00_00_00.1")
	for _, f := range []string{"shop.crt", "shop.key"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	sink := &fakeSink{}
	s := newTestStore(t, dir, sink)
	first := served(t, s, "shop.example.com")
	if first == s.def || len(sink.get()) != 0 {
		t.Fatalf("through links: default served or diagnostics %v", sink.get())
	}
	version("..2026_06_02_00_00_00.2")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if second := served(t, s, "shop.example.com"); second == first || second == s.def {
		t.Fatal("the certificate behind the swapped links is not served")
	}
	// A link left dangling is W043, not a failed reload.
	if err := os.Symlink("missing.crt", filepath.Join(dir, "gone.crt")); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if d := sink.get(); len(d) != 1 || !strings.Contains(d[0].Message, "gone.crt") {
		t.Fatalf("a dangling link: %v", d)
	}
}

// A link to a file elsewhere (shop.crt -> /etc/letsencrypt/live/shop/
// fullchain.pem, which certbot re-points at each renewal): the link in the
// directory never changes, the file it leads to does.
func TestReloadFollowsLinksOutOfTheDirectory(t *testing.T) {
	ca := newTestCA(t)
	dir, elsewhere := t.TempDir(), t.TempDir()
	c1, k1 := ca.valid(t, "shop.example.com")
	writeFile(t, elsewhere, "fullchain.pem", c1)
	writeFile(t, elsewhere, "privkey.pem", k1)
	for link, target := range map[string]string{"shop.crt": "fullchain.pem", "shop.key": "privkey.pem"} {
		if err := os.Symlink(filepath.Join(elsewhere, target), filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := newTestStore(t, dir, &fakeSink{})
	first := served(t, s, "shop.example.com")
	if first == s.def {
		t.Fatal("through links: the default certificate is served")
	}
	c2, k2 := ca.valid(t, "shop.example.com")
	writeFile(t, elsewhere, "privkey.pem", k2)
	writeFile(t, elsewhere, "fullchain.pem", c2)
	future := time.Now().Add(time.Minute) // a new mtime even on coarse clocks
	for _, f := range []string{"fullchain.pem", "privkey.pem"} {
		_ = os.Chtimes(filepath.Join(elsewhere, f), future, future)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if second := served(t, s, "shop.example.com"); second == first || second == s.def {
		t.Fatal("the renewed certificate behind the links is not served")
	}
}

// Certificates given one by one (--tls-cert), under any names (certbot's
// fullchain.pem and privkey.pem) or as one PEM file holding both, are
// chosen by SNI beside the directory's; an unusable pair is one W043
// naming the flag and the file; a renewed file is reloaded.
func TestCertificateFiles(t *testing.T) {
	ca := newTestCA(t)
	dir, live := t.TempDir(), t.TempDir()
	c, k := ca.valid(t, "dir.example.com")
	writeFile(t, dir, "dir.crt", c)
	writeFile(t, dir, "dir.key", k)
	c, k = ca.valid(t, "shop.example.com")
	writeFile(t, live, "fullchain.pem", c)
	writeFile(t, live, "privkey.pem", k)
	c, k = ca.valid(t, "both.example.com")
	writeFile(t, live, "both.pem", append(c, k...))
	_, otherKey := ca.valid(t, "other.example.com")
	writeFile(t, live, "wrongkey.pem", otherKey)
	sink := &fakeSink{}
	s, err := New(Options{Dir: dir, Files: []FilePair{
		{Cert: filepath.Join(live, "fullchain.pem"), Key: filepath.Join(live, "privkey.pem")},
		{Cert: filepath.Join(live, "both.pem")},
		{Cert: filepath.Join(live, "fullchain.pem"), Key: filepath.Join(live, "wrongkey.pem")},
		{Cert: filepath.Join(live, "missing.pem"), Key: filepath.Join(live, "privkey.pem")},
		{Cert: filepath.Join(live, "fullchain.pem")}, // no key in it, none given
	}, Sink: sink, Now: func() time.Time { return testNow }, Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"dir.example.com", "shop.example.com", "both.example.com"} {
		if served(t, s, name) == s.def {
			t.Errorf("%s: the default certificate is served", name)
		}
	}
	diags := sink.get()
	if len(diags) != 3 {
		t.Fatalf("diagnostics %v, want the mismatched key, the missing file and the missing key", diags)
	}
	for i, want := range []string{"private key does not match public key", "reading certificate",
		"has no key: want --tls-cert " + filepath.Join(live, "fullchain.pem") + ",KEY"} {
		if d := diags[i]; d.Code != diagnostics.BadCertificate || d.Key != "--tls-cert" || !strings.Contains(d.Message, want) {
			t.Errorf("diagnostic %d: %s %s %q, want W043 --tls-cert saying %q", i, d.Code, d.Key, d.Message, want)
		}
	}

	first := served(t, s, "shop.example.com")
	c, k = ca.valid(t, "shop.example.com")
	writeFile(t, live, "privkey.pem", k)
	writeFile(t, live, "fullchain.pem", c)
	future := time.Now().Add(time.Minute) // a new mtime even on coarse clocks
	for _, f := range []string{"fullchain.pem", "privkey.pem"} {
		_ = os.Chtimes(filepath.Join(live, f), future, future)
	}
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if second := served(t, s, "shop.example.com"); second == first || second == s.def {
		t.Fatal("the renewed file is not served")
	}
	// Only files, no directory: loaded and polled all the same.
	only, err := New(Options{Files: []FilePair{{Cert: filepath.Join(live, "both.pem")}}, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if served(t, only, "both.example.com") == only.def {
		t.Error("without --tls-cert-dir, --tls-cert is not served")
	}
}
