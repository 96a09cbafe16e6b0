//lint:file-ignore SA1019 HTTP/2 is served by x/net/http2.Server (ServeConn), as in guard_test.go

package h2guard

import (
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
)

// A cleartext HTTP/2 connection (h2c) is guarded as a TLS one is: a PING
// flood is cut, and the HTTP/2 server does not
// take the guarded connection for TLS (it serves it).
func TestPlainFloodIsCut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	frozen := time.Unix(1_000_000, 0)
	cut := make(chan uint8, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				g := NewPlain(c, Options{Now: func() time.Time { return frozen }, OnFlood: func(typ uint8) { cut <- typ }})
				(&http2.Server{}).ServeConn(g, &http2.ServeConnOpts{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					_, _ = io.WriteString(w, "ok")
				})})
				g.Close()
			}()
		}
	}()

	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	c := &http.Client{Transport: &http.Transport{Protocols: &p}, Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("h2c request through the guard: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || string(body) != "ok" {
		t.Fatalf("%s %q, want HTTP/2 ok", resp.Proto, body)
	}

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_, _ = io.WriteString(conn, http2.ClientPreface)
	rc := &rawClient{conn: conn, fr: http2.NewFramer(conn, conn)}
	_ = rc.fr.WriteSettings()
	go func() {
		for range 2 * Burst {
			if rc.fr.WritePing(false, [8]byte{1}) != nil {
				return
			}
		}
	}()
	rc.readsUntilEnd(t) // the connection ends (GOAWAY first when it can be sent)
	select {
	case typ := <-cut:
		if typ != typePing {
			t.Errorf("cut for frame type %d, want PING", typ)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the flood was not reported")
	}
}
