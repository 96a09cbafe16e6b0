package tcp

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
)

// selfSigned returns a certificate for name and the pool that trusts it.
func selfSigned(t *testing.T, name string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// A TLS client reaches, through the shared TLS listener, the TCP route its
// SNI names, and sees the backend's own certificate (passthrough); a
// client with another name gets the listener's HTTP server and its
// certificate, on the same port.
func TestSNIPassthroughBesideHTTP(t *testing.T) {
	h := newHarness(t)
	backendCert, backendPool := selfSigned(t, "db.example.com")
	httpCert, httpPool := selfSigned(t, "www.example.com")

	bln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{backendCert}})
	if err != nil {
		t.Fatal(err)
	}
	defer bln.Close()
	go func() {
		for {
			c, err := bln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	h.route(config.TCP{Listener: "websecure", SNI: []string{"db.example.com"}}, nil, bln.Addr().String())

	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := h.p.SNIListener(raw, "websecure", 5*time.Second)
	srv := &http.Server{
		Handler:   http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "http route") }),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{httpCert}},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	defer srv.Close()

	c, err := tls.Dial("tcp", raw.Addr().String(), &tls.Config{ServerName: "db.example.com", RootCAs: backendPool})
	if err != nil {
		t.Fatalf("TLS through the SNI route: %v", err)
	}
	defer c.Close()
	if got := c.ConnectionState().PeerCertificates[0].Subject.CommonName; got != "db.example.com" {
		t.Fatalf("certificate %q, want the backend's", got)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("echo %q %v", buf, err)
	}

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{ServerName: "www.example.com", RootCAs: httpPool}}}
	resp, err := client.Get("https://" + raw.Addr().String() + "/")
	if err != nil {
		t.Fatalf("HTTP beside the SNI route: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "http route" {
		t.Fatalf("HTTP answer %q", body)
	}
}

// peekServerName reads a ClientHello sent in many small writes, and gives
// back every byte it read.
func TestPeekServerNameSplitHello(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() {
		// A client whose writes go out a few bytes at a time.
		c := tls.Client(&trickle{Conn: a}, &tls.Config{ServerName: "split.example.com", InsecureSkipVerify: true})
		_ = c.Handshake()
	}()
	name, replay, err := peekServerName(b, 5*time.Second)
	if err != nil || name != "split.example.com" {
		t.Fatalf("name %q err %v", name, err)
	}
	if len(replay) < 5 || replay[0] != 22 { // a handshake record (RFC 8446 5.1)
		t.Fatalf("replay %x is not the ClientHello record", replay)
	}
}

// trickle writes in chunks of 7 bytes.
type trickle struct{ net.Conn }

func (t *trickle) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(7, len(p))
		w, err := t.Conn.Write(p[:k])
		n += w
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// tls=terminate: Levee completes the handshake with its own certificate
// (no ALPN) and the backend receives the plain bytes.
func TestSNITerminate(t *testing.T) {
	cert, pool := selfSigned(t, "plain.example.com")
	h := newHarnessTLS(t, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	h.route(config.TCP{Listener: "websecure", SNI: []string{"plain.example.com"}, TLS: config.TCPTerminate}, nil, echoBackend(t))
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := h.p.SNIListener(raw, "websecure", 5*time.Second)
	defer ln.Close()
	c, err := tls.Dial("tcp", raw.Addr().String(), &tls.Config{ServerName: "plain.example.com", RootCAs: pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("TLS to Levee: %v", err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "" {
		t.Errorf("ALPN %q negotiated on a TCP route", p)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("plain\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "plain\n" {
		t.Fatalf("echo %q %v", buf, err)
	}
	// The client's close_notify half-closes toward the backend, whose
	// goodbye still arrives.
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(c)
	if string(rest) != "bye\n" {
		t.Fatalf("after close_notify got %q, want bye", rest)
	}
}
