package h3

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/levee-proxy/levee/router/httpx/internal/testcert"
)

type ctxKey struct{}

// start serves h on a loopback UDP socket with o; the server is closed
// when the test ends. It returns the server and a client config trusting
// its certificate.
func start(t *testing.T, h http.Handler, o Options) (*Server, *tls.Config) {
	t.Helper()
	cfg := testcert.Config(t, "h3.test", "h2", "http/1.1")
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.Handler, o.TLS = h, cfg
	s, err := Listen(pc, o)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		_ = s.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	cert, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return s, &tls.Config{RootCAs: pool, ServerName: "h3.test"}
}

// client speaks HTTP/3 to s whatever the URL's host.
func client(t *testing.T, s *Server, cfg *tls.Config) *http.Client {
	t.Helper()
	tr := &http3.Transport{
		TLSClientConfig: cfg,
		QUICConfig:      &quic.Config{HandshakeIdleTimeout: 2 * time.Second},
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, qcfg *quic.Config) (*quic.Conn, error) {
			return quic.DialAddr(ctx, s.Addr().String(), tlsCfg, qcfg)
		},
	}
	t.Cleanup(func() { _ = tr.Close() })
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func get(c *http.Client, path string, header http.Header) (int, string, error) {
	req, _ := http.NewRequest("GET", "https://h3.test"+path, nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// The handler sees what it sees over HTTP/2: the protocol, the TLS
// state, the client's address, the connection's context.
func TestRequestSeesProtocolTLSClientAndContext(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		alpn := "no TLS"
		if r.TLS != nil {
			alpn = r.TLS.NegotiatedProtocol + " " + tls.VersionName(r.TLS.Version) + " " + r.TLS.ServerName
		}
		fmt.Fprintf(w, "%s|%s|%s|%s|%v", r.Proto, alpn, host, r.Host, r.Context().Value(ctxKey{}))
	})
	s, cfg := start(t, h, Options{ConnContext: func(ctx context.Context) context.Context {
		return context.WithValue(ctx, ctxKey{}, "websecure")
	}})
	status, body, err := get(client(t, s, cfg), "/a", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/3.0|h3 TLS 1.3 h3.test|127.0.0.1|h3.test|websecure"; status != 200 || body != want {
		t.Errorf("got %d %q, want 200 %q", status, body, want)
	}
}

// A request head past MaxHeaderBytes is answered 431, as on the other
// servers; one within it is served.
func TestHeaderLimit(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	s, cfg := start(t, h, Options{MaxHeaderBytes: 2048})
	c := client(t, s, cfg)
	status, _, err := get(c, "/", http.Header{"X-Big": {strings.Repeat("a", 4096)}})
	if err != nil || status != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("4 KiB header: %d %v, want 431", status, err)
	}
	status, _, err = get(c, "/", http.Header{"X-Small": {"a"}})
	if err != nil || status != 200 {
		t.Errorf("small header: %d %v, want 200", status, err)
	}
}

// Alt-Svc is added to answers over HTTP/1.1 and HTTP/2 with the public
// port, and not to HTTP/3 ones.
func TestAltSvcAdvertisesThePublicPort(t *testing.T) {
	s, _ := start(t, http.NotFoundHandler(), Options{PublicPort: 443})
	h := s.AltSvc(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	for _, proto := range []struct {
		major int
		want  string
	}{{1, `h3=":443"; ma=86400`}, {2, `h3=":443"; ma=86400`}, {3, ""}} {
		r := httptest.NewRequest("GET", "/", nil)
		r.ProtoMajor = proto.major
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := w.Header().Get("Alt-Svc"); got != proto.want {
			t.Errorf("HTTP/%d: Alt-Svc %q, want %q", proto.major, got, proto.want)
		}
	}
	if got := AltSvcValue(8443, time.Hour); got != `h3=":8443"; ma=3600` {
		t.Errorf("AltSvcValue: %q", got)
	}
}

// Without PublicPort, Alt-Svc names the socket's port.
func TestAltSvcDefaultsToTheSocketPort(t *testing.T) {
	s, _ := start(t, http.NotFoundHandler(), Options{})
	_, port, _ := net.SplitHostPort(s.Addr().String())
	r := httptest.NewRequest("GET", "/", nil)
	w := httptest.NewRecorder()
	s.AltSvc(http.NotFoundHandler()).ServeHTTP(w, r)
	if got, want := w.Header().Get("Alt-Svc"), `h3=":`+port+`"; ma=86400`; got != want {
		t.Errorf("Alt-Svc %q, want %q", got, want)
	}
}

// Past MaxConns a new connection is refused and counted; once one
// closes, a new one is accepted. The client's CONNECTION_CLOSE is a
// single UDP datagram, which a loaded host may drop: the server then
// frees the slot at its idle timeout, short here, within the wait.
func TestMaxConnsRefusesPastTheLimit(t *testing.T) {
	var refused atomic.Int64
	const idle = 2 * time.Second
	s, cfg := start(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Options{MaxConns: 1, IdleTimeout: idle, OnRefused: func() { refused.Add(1) }})
	first := client(t, s, cfg)
	if status, _, err := get(first, "/", nil); err != nil || status != 200 {
		t.Fatalf("first connection: %d %v", status, err)
	}
	second := client(t, s, cfg)
	if _, _, err := get(second, "/", nil); err == nil {
		t.Fatal("a second connection was served past MaxConns 1")
	}
	if refused.Load() == 0 {
		t.Error("the refusal was not counted")
	}
	_ = first.Transport.(*http3.Transport).Close()
	deadline := time.Now().Add(idle + 5*time.Second)
	for {
		status, _, err := get(second, "/", nil)
		if err == nil && status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the first closed: %d %v (%d open)", status, err, s.Conns())
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// A resumed connection never has its early data accepted: 0-RTT is off.
func TestZeroRTTIsRefused(t *testing.T) {
	s, cfg := start(t, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), Options{})
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	cfg.NextProtos = []string{http3.NextProtoH3}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 2 {
		conn, err := quic.DialAddrEarly(ctx, s.Addr().String(), cfg, &quic.Config{})
		if err != nil {
			t.Fatal(err)
		}
		<-conn.HandshakeComplete()
		st := conn.ConnectionState()
		if i == 1 && !st.TLS.DidResume {
			t.Error("the second connection did not resume: the test proves nothing")
		}
		if st.Used0RTT {
			t.Errorf("connection %d used 0-RTT", i)
		}
		// The session ticket arrives after the handshake; the first
		// connection stays open until the client has it.
		if i == 0 {
			waitTicket(t, conn)
		}
		_ = conn.CloseWithError(0, "")
	}
}

// waitTicket returns once the client's connection has received the
// server's session ticket (sent in 1-RTT after the handshake): a stream
// round trip with the server guarantees the packets before it arrived.
func waitTicket(t *testing.T, conn *quic.Conn) {
	t.Helper()
	// The server's SETTINGS on its control stream follow the ticket.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	str, err := conn.AcceptUniStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := str.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
}

// Shutdown refuses new connections, lets the request in progress finish
// and returns once it has; Serve returns http.ErrServerClosed.
func TestShutdownDrainsRequestsInProgress(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		io.WriteString(w, "finished")
	})
	s, cfg := start(t, h, Options{})
	type result struct {
		status int
		body   string
		err    error
	}
	inflight := make(chan result, 1)
	go func() {
		status, body, err := get(client(t, s, cfg), "/slow", nil)
		inflight <- result{status, body, err}
	}()
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	// Once a new connection is refused, the shutdown is under way.
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		conn, err := quic.DialAddr(ctx, s.Addr().String(), &tls.Config{RootCAs: cfg.RootCAs, ServerName: cfg.ServerName, NextProtos: []string{http3.NextProtoH3}}, nil)
		cancel()
		if err != nil {
			break
		}
		_ = conn.CloseWithError(0, "")
		if time.Now().After(deadline) {
			t.Fatal("new connections still accepted during shutdown")
		}
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in progress", err)
	default:
	}
	close(release)
	if r := <-inflight; r.err != nil || r.status != 200 || r.body != "finished" {
		t.Errorf("request in progress: %d %q %v", r.status, r.body, r.err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// Shutdown gives up at its deadline: the connections are closed, and
// the handler's request context ends.
func TestShutdownDeadlineClosesConnections(t *testing.T) {
	started, ended := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
		close(ended)
	})
	s, cfg := start(t, h, Options{})
	go func() { _, _, _ = get(client(t, s, cfg), "/forever", nil) }()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown: %v, want the deadline", err)
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Error("the handler's request context did not end")
	}
}

// early0RTT serves h on a listener accepting 0-RTT and sends GET_0RTT on
// resumed connections (a fresh transport sharing one session cache) until
// one is answered, at most tries times; it returns the bodies.
func early0RTT(t *testing.T, h http.Handler, o Options, tries int) []string {
	t.Helper()
	s, cfg := start(t, h, o)
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	var bodies []string
	for i := range tries {
		tr := &http3.Transport{
			TLSClientConfig: cfg,
			QUICConfig:      &quic.Config{HandshakeIdleTimeout: 2 * time.Second},
			Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, qcfg *quic.Config) (*quic.Conn, error) {
				return quic.DialAddrEarly(ctx, s.Addr().String(), tlsCfg, qcfg)
			},
		}
		method := http.MethodGet
		if i > 0 {
			method = http3.MethodGet0RTT
		}
		req, _ := http.NewRequest(method, "https://h3.test/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		bodies = append(bodies, string(b))
		_ = tr.Close()
	}
	return bodies
}

// With Allow0RTT a resumed connection's GET_0RTT reaches the handler
// before the handshake completes, and Early says so; the first
// connection's request, after a full handshake, is never early.
func TestZeroRTTAllowedMarksEarlyRequests(t *testing.T) {
	if raceDetector {
		// quic-go's client (v0.65.0) races with itself when a request
		// opens its stream in 0-RTT while the handshake completes
		// (Conn.handleTransportParameters against newFlowController): a
		// data race in the test's client, not in Levee's server. CI runs
		// this test without the race detector (.ci/passes.sh, format).
		t.Skip("quic-go's 0-RTT client races with itself under the race detector")
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		done, early := Early(r)
		fmt.Fprint(w, early)
		if early {
			<-done // the handshake completes: later requests are not early
			if _, again := Early(r); again {
				fmt.Fprint(w, " still early")
			}
		}
	})
	bodies := early0RTT(t, h, Options{Allow0RTT: true}, 6)
	if bodies[0] != "false" {
		t.Errorf("first connection's request: %q, want false", bodies[0])
	}
	sawEarly := false
	for _, b := range bodies[1:] {
		switch b {
		case "true":
			sawEarly = true
		case "false":
		default:
			t.Errorf("resumed request: %q", b)
		}
	}
	if !sawEarly {
		t.Errorf("no resumed request arrived early: %q", bodies)
	}
}

// Without Allow0RTT no request is ever early, even one sent as GET_0RTT.
func TestZeroRTTOffNoRequestIsEarly(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, early := Early(r)
		fmt.Fprint(w, early)
	})
	for i, b := range early0RTT(t, h, Options{}, 3) {
		if b != "false" {
			t.Errorf("request %d: %q, want false", i, b)
		}
	}
}
