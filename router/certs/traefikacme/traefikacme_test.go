package traefikacme_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router/certs"
	"github.com/levee-proxy/levee/router/certs/traefikacme"
)

// issue makes a self-signed certificate for names, valid 90 days from
// now, as base64 PEM the way acme.json holds them.
func issue(t *testing.T, names ...string) (chainB64, keyB64 string, der []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	enc := base64.StdEncoding.EncodeToString
	return enc(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), enc(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})), der
}

type cert struct {
	Domain struct {
		Main string   `json:"main"`
		SANs []string `json:"sans,omitempty"`
	} `json:"domain"`
	Certificate string `json:"certificate"`
	Key         string `json:"key"`
	Store       string `json:"Store"`
}

func acmeJSON(t *testing.T, resolvers map[string][]cert) string {
	t.Helper()
	file := map[string]any{}
	for name, cs := range resolvers {
		file[name] = map[string]any{"Account": map[string]any{"Email": "ops@example.com", "PrivateKey": "MIIJ", "KeyType": "4096"}, "Certificates": cs}
	}
	b, err := json.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A certificate of acme.json imported into --cert-dir is served by the
// ACME manager for each of its names without an order: the CA here
// refuses connections, so a certificate served can only come from the
// storage. A broken pair is reported and not written; a second import
// leaves what is there.
func TestImportedCertificateIsServed(t *testing.T) {
	var good, other, broken cert
	var goodDER []byte
	good.Domain.Main, good.Domain.SANs = "shop.example.com", []string{"www.example.com"}
	good.Certificate, good.Key, goodDER = issue(t, "shop.example.com", "www.example.com")
	other.Domain.Main = "*.apps.example.com"
	other.Certificate, other.Key, _ = issue(t, "*.apps.example.com")
	broken.Domain.Main = "broken.example.com"
	broken.Certificate, _, _ = issue(t, "broken.example.com")
	_, broken.Key, _ = issue(t, "else.example.com") // not its key
	file := acmeJSON(t, map[string][]cert{"le": {good, broken}, "dns": {other}})

	list, problems, err := traefikacme.Read(strings.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Error(), `resolver "le", certificate 1 (broken.example.com)`) {
		t.Errorf("problems %v, want the broken pair named", problems)
	}
	if len(list) != 2 || list[0].Resolver != "dns" || !slices.Equal(list[1].Names, []string{"shop.example.com", "www.example.com"}) {
		t.Fatalf("certificates %+v", list)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadCA := "https://" + ln.Addr().String() + "/dir"
	ln.Close()
	dir := t.TempDir()
	storage := &certmagic.FileStorage{Path: dir}
	res, err := traefikacme.Import(context.Background(), storage, deadCA, list)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || !res[0].Imported || !res[2].Imported {
		t.Errorf("results %+v", res)
	}
	again, err := traefikacme.Import(context.Background(), storage, deadCA, list)
	if err != nil || len(again) != 3 || again[0].Imported || again[1].Imported {
		t.Errorf("second import %+v %v: want every name left as it was", again, err)
	}

	store, err := certs.New(certs.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := certs.NewACME(certs.ACMEOptions{CA: deadCA, Email: "ops@example.com", StorageDir: dir, TLSPort: 1,
		Logger: zerolog.Nop(), Registerer: prometheus.NewRegistry()}, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	m.SetHosts(ctx, []string{"shop.example.com", "www.example.com"})
	for _, name := range []string{"shop.example.com", "www.example.com"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			conn, peer := net.Pipe() // certmagic logs the client's address
			c, err := store.GetCertificate(&tls.ClientHelloInfo{ServerName: name, Conn: conn})
			conn.Close()
			peer.Close()
			if err == nil && len(c.Certificate) > 0 && string(c.Certificate[0]) == string(goodDER) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the imported certificate is not served", name)
			}
			time.Sleep(10 * time.Millisecond) // polling interval, not synchronisation
		}
	}
}

func TestReadRefusesOtherFiles(t *testing.T) {
	for in, want := range map[string]string{
		`[1,2]`: "not Traefik's acme.json",
		`{"Account":{"Email":"x"},"Certificates":[{"Domain":{"Main":"a"}}],"DomainsCertificate":{}}`: "Traefik v1",
	} {
		if _, _, err := traefikacme.Read(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}
