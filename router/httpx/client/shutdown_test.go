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
