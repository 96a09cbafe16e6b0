package server

import (
	"bufio"
	"bytes"
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

// holdRecorder is a connection under TLS that can hold writes (as
// tlsmux's can); it records whether it was asked to.
type holdRecorder struct {
	net.Conn
	held chan struct{}
}

func (h *holdRecorder) HoldWrites() { close(h.held) }

// The server asks the connection under TLS to hold its writes only before
// an answer after which it closes the connection at once: not before an
// answer on a connection kept alive, nor when it lingers to drain an
// unread body (a held answer would wait for the linger). The answer
// arrives whole either way, and on the closed connection the TLS
// close_notify alert after it.
func TestHoldsTheWritesOfTheLastAnswerOnly(t *testing.T) {
	cases := []struct {
		name, request string
		wantHeld      bool
	}{
		{"connection close", "GET / HTTP/1.1\r\nHost: srv.test\r\nConnection: close\r\n\r\n", true},
		{"keep-alive", "GET / HTTP/1.1\r\nHost: srv.test\r\n\r\n", false},
		{"unread body", "POST / HTTP/1.1\r\nHost: srv.test\r\nConnection: close\r\nContent-Length: 100000\r\n\r\nxx", false},
	}
	cfg := testcert.Config(t, "srv.test", "http/1.1")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			srv := &Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, "ok")
			})}
			rec := &holdRecorder{held: make(chan struct{})}
			served := make(chan struct{})
			go func() {
				defer close(served)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				rec.Conn = c
				srv.ServeConn(context.Background(), tls.Server(rec, cfg))
			}()
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			wire := &wireRecorder{Conn: raw}
			// TLS 1.2: record types are not encrypted, so the alert is
			// seen on the wire.
			client := tls.Client(wire, &tls.Config{InsecureSkipVerify: true, ServerName: "srv.test", MaxVersion: tls.VersionTLS12})
			defer client.Close()
			if _, err := io.WriteString(client, tc.request); err != nil {
				t.Fatal(err)
			}
			_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
			br := bufio.NewReader(client)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Fatalf("answer %d %q", resp.StatusCode, body)
			}
			if tc.wantHeld {
				if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
					t.Fatalf("after the last answer: %q, %v; want the end", rest, err)
				}
				if last := wire.lastRecordType(); last != 0x15 {
					t.Fatalf("the last TLS record is of type %#x, want an alert (0x15): close_notify", last)
				}
			} else {
				client.Close() // ends the keep-alive connection
			}
			<-served
			select {
			case <-rec.held:
				if !tc.wantHeld {
					t.Fatal("writes held before an answer that is not the connection's last")
				}
			default:
				if tc.wantHeld {
					t.Fatal("the last answer's writes were not held")
				}
			}
		})
	}
}

// wireRecorder keeps the bytes a TLS client reads off the wire.
type wireRecorder struct {
	net.Conn
	got bytes.Buffer
}

func (w *wireRecorder) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	w.got.Write(p[:n])
	return n, err
}

// lastRecordType walks the TLS records received (5-byte headers: type,
// version, length) and returns the last one's type.
func (w *wireRecorder) lastRecordType() byte {
	b, last := w.got.Bytes(), byte(0)
	for len(b) >= 5 {
		last = b[0]
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if n > len(b) {
			break
		}
		b = b[n:]
	}
	return last
}
