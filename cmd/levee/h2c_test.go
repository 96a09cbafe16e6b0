package main

import (
	"context"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/router"
)

// An h2c listener serves HTTP/2 with prior knowledge and HTTP/1.1 on the
// same port, under both HTTP/1.1 servers, and its HTTP/2 is guarded.
func TestH2CListenerServesBothProtocols(t *testing.T) {
	for _, kind := range []string{"levee", "stdlib"} {
		t.Run(kind, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			spec := listenerSpec{Name: "grpc", Addr: ln.Addr().String(), H2C: true}
			l := &router.Listener{Name: "grpc"}
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, r.Proto+" on "+listenerName(router.ListenerOf(r.Context())))
			})
			errLog := stdlog.New(io.Discard, "", 0)
			cut := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cut"}, []string{"frame"})
			srv := newPlainServer(kind, h, spec, l, errLog)
			hl := newH2CListener(ln, h, spec, l, errLog, cut)
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
				resp, err := c.Get("http://" + spec.Addr + "/")
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
			conn, err := net.Dial("tcp", spec.Addr)
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

func listenerName(l *router.Listener) string {
	if l == nil {
		return "(none)"
	}
	return l.Name
}
