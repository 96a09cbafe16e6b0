//lint:file-ignore SA1019 the test reads the settings http2.ConfigureServer gives the x/net/http2.Server of the h2c and TLS listeners (h2c.go, tls.go)

package front

import (
	"context"
	"crypto/tls"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/httpx/server"
)

// listenerKey carries a test listener's name in the requests' base
// context, as the router's listener does.
type listenerKey struct{}

// An h2c listener serves HTTP/2 with prior knowledge and HTTP/1.1 on the
// same port, under both HTTP/1.1 servers, with the requests' base context.
func TestH2CListenerServesBothProtocols(t *testing.T) {
	for _, stdlib := range []bool{false, true} {
		name := map[bool]string{false: "levee", true: "stdlib"}[stdlib]
		t.Run(name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				l, _ := r.Context().Value(listenerKey{}).(string)
				_, _ = io.WriteString(w, r.Proto+" on "+l)
			})
			o := Options{
				Handler:  h,
				Base:     context.WithValue(context.Background(), listenerKey{}, "grpc"),
				Limits:   Limits{HeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute, MaxHeaderBytes: 1 << 20},
				Stdlib:   stdlib,
				ErrorLog: stdlog.New(io.Discard, "", 0),
			}
			srv := Plain(o)
			hl := H2C(ln, o)
			done := make(chan struct{})
			go func() { defer close(done); _ = srv.Serve(hl) }()
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = srv.Shutdown(ctx)
				<-done
			})

			var p http.Protocols
			p.SetUnencryptedHTTP2(true)
			h2 := &http.Client{Transport: &http.Transport{Protocols: &p}, Timeout: 10 * time.Second}
			h1 := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
			for name, c := range map[string]*http.Client{"HTTP/2.0": h2, "HTTP/1.1": h1} {
				resp, err := c.Get("http://" + addr + "/")
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != name+" on grpc" {
					t.Errorf("%s: %q, want %q", name, body, name+" on grpc")
				}
			}
			// Under 24 bytes and not the preface: answered as HTTP/1.x
			// at once, not after the header timeout.
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(conn, "GET / HTTP/1.0\r\n\r\n")
			got, _ := io.ReadAll(conn)
			if !strings.HasPrefix(string(got), "HTTP/1.0 200") && !strings.HasPrefix(string(got), "HTTP/1.1 200") {
				t.Errorf("short HTTP/1.0 request: %q", got)
			}
		})
	}
}

// A listener's limits reach its servers, whichever kind.
func TestLimitsReachTheServers(t *testing.T) {
	o := Options{Limits: Limits{HeaderTimeout: 3 * time.Second, IdleTimeout: 7 * time.Second, MaxHeaderBytes: 1 << 20, WriteTimeout: time.Minute}}
	o.Stdlib = true
	if srv := Plain(o).(*http.Server); srv.ReadHeaderTimeout != 3*time.Second || srv.IdleTimeout != 7*time.Second || srv.MaxHeaderBytes != 1<<20 {
		t.Errorf("stdlib: %v %v %d", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if srv := TLS(o, &tls.Config{}).(tlsServer); srv.ReadHeaderTimeout != 3*time.Second || srv.IdleTimeout != 7*time.Second {
		t.Errorf("tls stdlib: %v %v", srv.ReadHeaderTimeout, srv.IdleTimeout)
	}
	// Every HTTP/2 server's connections are closed once no byte could be
	// written for the write timeout.
	if srv := TLS(o, &tls.Config{}).(tlsServer); srv.HTTP2 == nil || srv.HTTP2.WriteByteTimeout != time.Minute {
		t.Errorf("tls stdlib: HTTP/2 config %+v", srv.HTTP2)
	}
	o.Stdlib = false
	if srv := Plain(o).(*server.Server); srv.ReadHeaderTimeout != 3*time.Second || srv.IdleTimeout != 7*time.Second || srv.MaxHeaderBytes != 1<<20 {
		t.Errorf("levee: %v %v %d", srv.ReadHeaderTimeout, srv.IdleTimeout, srv.MaxHeaderBytes)
	}
	if h2c := newH2CListener(nil, o); h2c.base.HTTP2 == nil || h2c.base.HTTP2.WriteByteTimeout != time.Minute {
		t.Errorf("h2c: HTTP/2 config %+v", h2c.base.HTTP2)
	}
	split := TLS(o, &tls.Config{}).(*splitTLSServer)
	if split.base.HTTP2 == nil || split.base.HTTP2.WriteByteTimeout != time.Minute {
		t.Errorf("tls levee: HTTP/2 config %+v", split.base.HTTP2)
	}
	if split.h1.ReadHeaderTimeout != 3*time.Second || split.h1.IdleTimeout != 7*time.Second ||
		split.mux.HandshakeTimeout != 3*time.Second || split.h2.IdleTimeout != 7*time.Second ||
		split.mux.HeldWriteTimeout != time.Minute {
		t.Errorf("tls levee: h1 %v %v, handshake %v, h2 idle %v, held writes %v", split.h1.ReadHeaderTimeout, split.h1.IdleTimeout,
			split.mux.HandshakeTimeout, split.h2.IdleTimeout, split.mux.HeldWriteTimeout)
	}
}
