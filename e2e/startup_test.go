package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// With no reachable engine Levee still serves, logs one clear error naming
// the address it tried, and keeps retrying in the background.
func TestStartsWithoutDocker(t *testing.T) {
	const host = "tcp://127.0.0.1:1"
	p := startLevee(t, "--docker-host", host)

	status, _, body := get(t, p.apiURL()+"/health", "")
	if status != http.StatusOK {
		t.Fatalf("/health = %d %q, want 200", status, body)
	}
	// The proxy answers too: no routes yet, so a coded 404.
	status, hdr, _ := get(t, p.proxyURL()+"/", "nothing.example")
	if status != http.StatusNotFound || hdr.Get("X-Levee-Diagnostic") != "no-route" {
		t.Fatalf("proxy = %d %q, want 404 no-route", status, hdr.Get("X-Levee-Diagnostic"))
	}

	errLine := p.waitLog(20*time.Second, func(l map[string]any) bool {
		return l["level"] == "error" && strings.Contains(fmt.Sprint(l), "127.0.0.1:1")
	})
	t.Logf("error line: %v", errLine)

	// It keeps retrying without repeating the error at error level.
	p.waitLog(30*time.Second, func(l map[string]any) bool {
		return l["level"] == "debug" && strings.Contains(fmt.Sprint(l), "127.0.0.1:1")
	})
	errors := 0
	for _, l := range p.logs() {
		if l["level"] == "error" && strings.Contains(fmt.Sprint(l), "127.0.0.1:1") {
			errors++
		}
	}
	if errors != 1 {
		t.Fatalf("got %d error lines naming the docker host, want exactly 1", errors)
	}
}

// SIGTERM stops accepting, lets in-flight requests finish, and exits 0.
func TestSIGTERMDrainsInFlight(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		w.Write([]byte("finished"))
	}))
	defer backend.Close()
	defer close(release)

	p := startLevee(t, "--docker=false")
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"slow","config":{"hostnames":["slow.test"]},"backends":[{"address":"127.0.0.1","port":%s}]}`, portOf(t, backend.URL)))

	var wg sync.WaitGroup
	var status int
	var body string
	wg.Add(1)
	go func() {
		defer wg.Done()
		status, _, body = get(t, p.proxyURL()+"/", "slow.test")
	}()
	<-arrived

	exited := make(chan error, 1)
	go func() { exited <- p.signal(syscall.SIGTERM, 20*time.Second) }()
	p.waitLog(10*time.Second, func(l map[string]any) bool {
		return strings.Contains(fmt.Sprint(l["message"]), "draining")
	})
	release <- struct{}{}
	wg.Wait()
	if err := <-exited; err != nil {
		t.Fatalf("levee exited with %v after SIGTERM, want exit 0", err)
	}
	if status != http.StatusOK || body != "finished" {
		t.Fatalf("in-flight request got %d %q, want 200 finished", status, body)
	}
}
