package docker

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
	"github.com/levee-proxy/levee/provider/labels"
)

// recordingEngine is an HTTP proxy in front of the engine's unix socket
// that records every API call the provider makes.
type recordingEngine struct {
	mu    sync.Mutex
	calls []string // "GET /containers/<id>/json", version prefix removed
}

var apiVersion = regexp.MustCompile(`^/v[0-9.]+`)

func (r *recordingEngine) record(req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req.Method+" "+apiVersion.ReplaceAllString(req.URL.Path, ""))
}

// inspected returns how often each container ID was inspected.
func (r *recordingEngine) inspected() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, c := range r.calls {
		if id, ok := strings.CutPrefix(c, "GET /containers/"); ok && strings.HasSuffix(id, "/json") {
			out[strings.TrimSuffix(id, "/json")]++
		}
	}
	return out
}

func startRecordingEngine(t *testing.T, sock string) (*recordingEngine, string) {
	rec := &recordingEngine{}
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: "docker"})
	rp.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	rp.FlushInterval = -1 // the events stream
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		rec.record(req)
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	return rec, "tcp://" + srv.Listener.Addr().String()
}

// A host full of containers that carry none of the provider's labels costs
// it no inspect, at the initial list or on their events (starts and
// healthchecks), counted on the wire against the real engine. The test uses
// its own label prefix, so that every other test's container on the shared
// engine is "unlabelled" for this provider too.
func TestEngineUnlabelledContainersAreNotInspected(t *testing.T) {
	t.Parallel()
	cli := dockertest.Require(t)
	sock, ok := strings.CutPrefix(cli.DaemonHost(), "unix://")
	if !ok {
		t.Skipf("the recording proxy fronts a unix socket; engine is at %s", cli.DaemonHost())
	}
	img := dockertest.EchoImage(t, cli)
	var unrelated []string
	for range 3 {
		id := dockertest.Create(t, cli, dockertest.Spec{Image: img, Healthcheck: dockertest.EchoHealthcheck(time.Second)})
		dockertest.Start(t, cli, id)
		unrelated = append(unrelated, id)
	}
	rec, host := startRecordingEngine(t, sock)
	const prefix = "leveerel"
	w, _, _ := runProvider(t, host, Options{Parser: labels.Parser{Prefix: prefix}})

	// Their health checks keep emitting events while a labelled container
	// starts; once it is in an update, the events before it were handled.
	labelled := dockertest.Create(t, cli, dockertest.Spec{Image: img, Labels: map[string]string{prefix + ".enable": "true"}})
	dockertest.Start(t, cli, labelled)
	dockertest.Eventually(t, engineWait, present(w, labelled, nil))
	for _, id := range unrelated {
		dockertest.Stop(t, cli, id)
		dockertest.Start(t, cli, id)
	}
	// Another labelled start, after the unrelated restarts: its arrival
	// shows they have been through the provider.
	second := dockertest.Create(t, cli, dockertest.Spec{Image: img, Labels: map[string]string{prefix + ".enable": "true"}})
	dockertest.Start(t, cli, second)
	dockertest.Eventually(t, engineWait, present(w, second, nil))

	got := rec.inspected()
	for _, id := range unrelated {
		if got[id] != 0 {
			t.Errorf("unlabelled container %.12s inspected %d times, want 0", id, got[id])
		}
	}
	if got[labelled] == 0 || got[second] == 0 {
		t.Errorf("labelled containers inspected %d and %d times, want at least once each (calls: %v)", got[labelled], got[second], got)
	}
	// Besides those, only the provider's look for its own container (by
	// host name, own.go) is allowed: no other container on the engine.
	own, _ := os.Hostname()
	for id := range got {
		if id != labelled && id != second && id != own {
			t.Errorf("container %.12s inspected, want only the labelled ones and %q (own container detection)", id, own)
		}
	}
}
