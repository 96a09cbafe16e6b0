package client

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// A backend shutting down closes every idle keep-alive connection at once
// and stops listening (Go's http.Server.Shutdown, most servers on
// SIGTERM). A request that meets one of those pooled connections is sent
// again on a new connection, not on the next dead pooled one, and the
// refused connect comes back as the dialer's error: the proxy can tell
// that the request never left and send it to another backend.
func TestBackendShutdownGivesRefusedNotAnotherDeadPooledConnection(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		_, _ = io.WriteString(w, "ok")
	}))
	tr := New(Options{DialTimeout: time.Second, IdleConnTimeout: time.Minute, MaxIdleConnsPerHost: 8})
	defer tr.Shutdown()
	host := srv.Listener.Addr().String()
	// Four requests at once: four connections, pooled afterwards.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
	}
	for range 4 {
		<-arrived
	}
	close(release)
	wg.Wait()
	if n := tr.IdleConns(host); n != 4 {
		t.Fatalf("idle connections = %d, want 4", n)
	}
	srv.Close() // stops listening, closes the idle connections

	req, _ := http.NewRequest(http.MethodGet, "http://"+host+"/", nil)
	_, err := tr.RoundTrip(req)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("error = %v, want the refused dial", err)
	}
	if n := tr.IdleConns(host); n != 0 {
		t.Fatalf("idle connections after the failure = %d, want 0 (dropped)", n)
	}
}

// A backend closing its listener drops the connections in its accept
// queue: a new connection closed before a byte of answer is dialled once
// more for an idempotent request (the second dial is refused if the
// backend stopped listening, answered if it is up again), never for a
// POST, and a backend that closes every connection unanswered fails the
// second one the same way.
func TestNewConnectionClosedUnansweredIsDialledOnceMoreForIdempotent(t *testing.T) {
	for _, tc := range []struct {
		name      string
		method    string
		closeN    int // connections the backend closes unanswered before serving
		wantConns int
		wantOK    bool
	}{
		{"GET: the second connection is served", http.MethodGet, 1, 2, true},
		{"POST: never sent twice", http.MethodPost, 1, 1, false},
		{"GET: a backend that closes both", http.MethodGet, 2, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var mu sync.Mutex
			conns := 0
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					mu.Lock()
					conns++
					n := conns
					mu.Unlock()
					go func() {
						defer c.Close()
						buf := make([]byte, 4096)
						_, _ = c.Read(buf) // the request
						if n <= tc.closeN {
							return // closed without a byte of answer
						}
						_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					}()
				}
			}()
			levee := New(Options{DialTimeout: time.Second})
			defer levee.Shutdown()
			std := NewStandard(&http.Transport{}, time.Second)
			defer std.CloseIdleConnections()
			for _, rt := range []struct {
				name string
				rt   func(*http.Request, Informer) (*http.Response, error)
			}{{"levee", levee.RoundTripInformational}, {"stdlib", std.RoundTripInformational}} {
				mu.Lock()
				before := conns
				mu.Unlock()
				req, _ := http.NewRequest(tc.method, "http://"+ln.Addr().String()+"/", nil)
				resp, err := rt.rt(req, nil)
				if tc.wantOK {
					if err != nil {
						t.Fatalf("%s: RoundTrip: %v, want the second connection's answer", rt.name, err)
					}
					resp.Body.Close()
				} else if err == nil || !ClosedBeforeAnswer(err) {
					t.Fatalf("%s: RoundTrip: %v, want a close before the answer", rt.name, err)
				}
				mu.Lock()
				got := conns - before
				conns = 0 // the next client meets the same backend from the start
				mu.Unlock()
				if got != tc.wantConns {
					t.Errorf("%s: the backend saw %d connections, want %d", rt.name, got, tc.wantConns)
				}
			}
		})
	}
}
