package server

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/httpx/internal/testcert"
)

// On a TLS connection every request carries the connection's TLS state,
// as net/http gives it (Request.TLS): the proxy sets X-Forwarded-Proto and
// HSTS from it. A crypto/tls listener's connections are handshaken by the
// server, within its header timeout.
func TestRequestsOnTLSCarryTheConnectionState(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testcert.Config(t, "srv.test", "http/1.1")
	states := make(chan *tls.ConnectionState, 2)
	srv := &Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		states <- r.TLS
		_, _ = io.WriteString(w, "ok")
	})}
	go func() { _ = srv.Serve(tls.NewListener(ln, cfg)) }()
	defer srv.Close()

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true, ServerName: "srv.test", NextProtos: []string{"http/1.1"}}}}
	defer client.CloseIdleConnections()
	for i := range 2 { // the second on the same keep-alive connection
		resp, err := client.Get("https://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		st := <-states
		if st == nil || !st.HandshakeComplete || st.ServerName != "srv.test" || st.NegotiatedProtocol != "http/1.1" {
			t.Fatalf("request %d: TLS state %+v, want the completed handshake for srv.test over http/1.1", i, st)
		}
	}
	// A plain-text client on the TLS port: the handshake fails, the
	// connection is closed, nothing reaches the handler.
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "GET / HTTP/1.1\r\nHost: srv.test\r\n\r\n")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, _ := io.ReadAll(c)
	if len(states) != 0 {
		t.Fatal("a plain-text request on the TLS port reached the handler")
	}
	if len(b) > 0 && string(b[:4]) == "HTTP" {
		t.Fatalf("a plain-text request on the TLS port was answered in plain text: %q", b)
	}
}

// ServeConn serves a connection accepted elsewhere in the caller's
// goroutine, with the given base context; once the server is shut down it
// closes a new one at once.
func TestServeConn(t *testing.T) {
	type ctxKey struct{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := &Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Context().Value(ctxKey{}).(string))
	})}
	base := context.WithValue(context.Background(), ctxKey{}, "from base")
	accept := func() <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := ln.Accept()
			if err != nil {
				return
			}
			srv.ServeConn(base, c)
		}()
		return done
	}
	done := accept()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{}}
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "from base" {
		t.Fatalf("body %q, want the base context's value", body)
	}
	client.CloseIdleConnections()
	<-done // ServeConn returns when the connection ends

	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	done = accept()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	<-done
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatalf("a connection served after Shutdown read %d bytes, %v; want it closed", n, err)
	}
}
