package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/e2e/dockertest"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router/config"
	"github.com/moby/moby/client"
	"github.com/rs/zerolog"
)

// Real-engine tests: generous deadlines, the machine is shared.
const engineWait = 60 * time.Second

// watcher is the injected parse step of a provider under test. It keeps
// the latest set of this test's containers (those labelled with its run ID;
// other tests and engineers share the engine).
type watcher struct {
	runID string
	mu    sync.Mutex
	set   []labels.Container
	at    time.Time
	n     int
}

func (w *watcher) parse(_ labels.Parser, cs []labels.Container) ([]config.Entrypoint, []diagnostics.Diagnostic) {
	var mine []labels.Container
	for _, c := range cs {
		if c.Labels[dockertest.Label] == w.runID {
			mine = append(mine, c)
		}
	}
	w.mu.Lock()
	w.set, w.at, w.n = mine, time.Now(), w.n+1
	w.mu.Unlock()
	return nil, nil
}

// find returns the latest facts of container id and when they were sent.
func (w *watcher) find(id string) (labels.Container, time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range w.set {
		if c.ID == id {
			return c, w.at, true
		}
	}
	return labels.Container{}, time.Time{}, false
}

type discard struct{}

func (discard) Update(config.SourceUpdate) {}

// runProvider starts a provider on host for t and waits for its first sync.
func runProvider(t *testing.T, host string, opts Options) (*watcher, *Provider, *syncBuffer) {
	t.Helper()
	w := &watcher{runID: dockertest.RunID(t)}
	logs := &syncBuffer{}
	opts.Host = host
	opts.Parse = w.parse
	opts.Logger = zerolog.New(logs).Level(zerolog.DebugLevel)
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, discard{}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v after cancel, want nil", err)
		}
		_ = p.Close()
	})
	dockertest.Eventually(t, engineWait, func() error {
		if !p.Synced() {
			return errors.New("provider not synced")
		}
		return nil
	})
	return w, p, logs
}

func present(w *watcher, id string, check func(labels.Container) error) func() error {
	return func() error {
		c, _, ok := w.find(id)
		if !ok {
			return fmt.Errorf("container %.12s not in the latest update", id)
		}
		if check != nil {
			return check(c)
		}
		return nil
	}
}

func absent(w *watcher, id string) func() error {
	return func() error {
		if _, _, ok := w.find(id); ok {
			return fmt.Errorf("container %.12s still in the latest update", id)
		}
		return nil
	}
}

func TestEngineStartStopDestroyReachUpdates(t *testing.T) {
	t.Parallel()
	cli := dockertest.Require(t)
	img := dockertest.EchoImage(t, cli)
	netName := dockertest.Network(t, cli)
	w, _, _ := runProvider(t, cli.DaemonHost(), Options{})

	id := dockertest.Create(t, cli, dockertest.Spec{
		Image:    img,
		Networks: []string{netName},
		Labels:   map[string]string{"levee.enable": "true", "levee.http.echo.host": "echo.test"},
	})
	started := time.Now()
	dockertest.Start(t, cli, id)
	dockertest.Eventually(t, engineWait, present(w, id, nil))
	c, at, _ := w.find(id)
	t.Logf("container in an update %v after ContainerStart was called", at.Sub(started))
	if at.Sub(started) > 10*time.Second {
		t.Errorf("update came %v after start, want well under 10s", at.Sub(started))
	}
	ip := dockertest.IPs(t, cli, id)[netName]
	if want := []labels.Network{{Name: netName, IP: ip}}; !reflect.DeepEqual(withoutIDs(c.Networks), want) {
		t.Errorf("networks = %+v, want %+v", c.Networks, want)
	}
	if !reflect.DeepEqual(c.ExposedPorts, []int{8080}) {
		t.Errorf("exposed ports = %v, want [8080] from the image's EXPOSE", c.ExposedPorts)
	}
	if c.Labels["levee.http.echo.host"] != "echo.test" || c.HasHealthcheck || strings.HasPrefix(c.Name, "/") || c.Name == "" {
		t.Errorf("facts = %+v", c)
	}
	if c.Created.IsZero() || time.Since(c.Created) > time.Hour {
		t.Errorf("created = %v, want the recent creation time", c.Created)
	}

	dockertest.Stop(t, cli, id)
	dockertest.Eventually(t, engineWait, absent(w, id))
	dockertest.Start(t, cli, id)
	dockertest.Eventually(t, engineWait, present(w, id, nil))
	dockertest.Remove(t, cli, id)
	dockertest.Eventually(t, engineWait, absent(w, id))
}

func TestEngineHealthTransitions(t *testing.T) {
	t.Parallel()
	cli := dockertest.Require(t)
	img := dockertest.EchoImage(t, cli)
	netName := dockertest.Network(t, cli)
	w, _, _ := runProvider(t, cli.DaemonHost(), Options{})
	id := dockertest.Run(t, cli, dockertest.Spec{
		Image:       img,
		Networks:    []string{netName},
		Healthcheck: dockertest.EchoHealthcheck(300 * time.Millisecond),
	})
	health := func(want string) func() error {
		return present(w, id, func(c labels.Container) error {
			if !c.HasHealthcheck || c.Health != want {
				return fmt.Errorf("health = %v %q, want %q", c.HasHealthcheck, c.Health, want)
			}
			return nil
		})
	}
	dockertest.Eventually(t, engineWait, health("healthy"))
	base := fmt.Sprintf("http://%s:%d", dockertest.IPs(t, cli, id)[netName], dockertest.EchoPort)
	post(t, base+"/_echo/fail")
	dockertest.Eventually(t, engineWait, health("unhealthy"))
	post(t, base+"/_echo/ok")
	dockertest.Eventually(t, engineWait, health("healthy"))
}

func post(t *testing.T, url string) {
	t.Helper()
	dockertest.Eventually(t, engineWait, func() error {
		resp, err := http.Post(url, "", nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("POST %s: %d", url, resp.StatusCode)
		}
		return nil
	})
}

func TestEngineNetworkConnectDisconnect(t *testing.T) {
	t.Parallel()
	cli := dockertest.Require(t)
	img := dockertest.EchoImage(t, cli)
	n1, n2 := dockertest.Network(t, cli), dockertest.Network(t, cli)
	w, _, _ := runProvider(t, cli.DaemonHost(), Options{})
	id := dockertest.Run(t, cli, dockertest.Spec{Image: img, Networks: []string{n1}})
	dockertest.Eventually(t, engineWait, present(w, id, nil))

	dockertest.Connect(t, cli, n2, id)
	dockertest.Eventually(t, engineWait, present(w, id, func(c labels.Container) error {
		ips := dockertest.IPs(t, cli, id)
		want := []labels.Network{{Name: n1, IP: ips[n1]}, {Name: n2, IP: ips[n2]}}
		// The provider orders networks by name (deterministic network
		// choice); n1 and n2 are not created in name order ("-10" < "-8").
		sort.Slice(want, func(i, j int) bool { return want[i].Name < want[j].Name })
		if !reflect.DeepEqual(withoutIDs(c.Networks), want) {
			return fmt.Errorf("networks = %+v, want %+v", c.Networks, want)
		}
		return nil
	}))
	dockertest.Disconnect(t, cli, n1, id)
	dockertest.Eventually(t, engineWait, present(w, id, func(c labels.Container) error {
		if len(c.Networks) != 1 || c.Networks[0].Name != n2 {
			return fmt.Errorf("networks = %+v, want only %s", c.Networks, n2)
		}
		return nil
	}))
}

// sockProxy forwards TCP connections to the engine's unix socket and can be
// taken down (listener closed, every connection cut) and brought back on
// the same address: a daemon that goes away and returns.
type sockProxy struct {
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

func (p *sockProxy) up(t *testing.T) {
	t.Helper()
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var ln net.Listener
	dockertest.Eventually(t, engineWait, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	})
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	if p.conns == nil {
		p.conns = map[net.Conn]struct{}{}
	}
	p.mu.Unlock()
	go p.accept(ln)
}

func (p *sockProxy) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("unix", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[u] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { _, _ = io.Copy(u, c); u.Close() }()
		go func() { _, _ = io.Copy(c, u); c.Close() }()
	}
}

func (p *sockProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func TestEngineStreamCutReconnectsAndResyncs(t *testing.T) {
	t.Parallel()
	cli := dockertest.Require(t)
	sock, ok := strings.CutPrefix(cli.DaemonHost(), "unix://")
	if !ok {
		t.Skipf("the stream-cut test proxies a unix socket; engine is at %s", cli.DaemonHost())
	}
	img := dockertest.EchoImage(t, cli)
	netName := dockertest.Network(t, cli)
	proxy := &sockProxy{target: sock}
	proxy.up(t)
	t.Cleanup(proxy.down)
	host := "tcp://" + proxy.addr
	w, p, logs := runProvider(t, host, Options{RetryMin: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond})

	proxy.down()
	dockertest.Eventually(t, engineWait, func() error {
		if len(logs.lines("warn", "lost the connection to the engine at "+host)) == 0 {
			return errors.New("no warning about the lost stream yet")
		}
		return nil
	})
	// Started while the provider is cut off: only a resync can find it.
	id := dockertest.Run(t, cli, dockertest.Spec{Image: img, Networks: []string{netName}})
	proxy.up(t)
	dockertest.Eventually(t, engineWait, present(w, id, nil))
	if !p.Synced() {
		t.Error("Synced() = false after reconnecting")
	}
	// The new stream works: a stop is seen.
	dockertest.Stop(t, cli, id)
	dockertest.Eventually(t, engineWait, absent(w, id))
	if n := len(logs.lines("error", "")); n != 0 {
		t.Errorf("error lines = %d, want 0 (a lost stream is a warning)", n)
	}
}

func TestUnreachableHostKeepsRetryingAndLogsOneError(t *testing.T) {
	t.Parallel()
	const host = "tcp://127.0.0.1:1"
	logs := &syncBuffer{}
	p, err := New(Options{Host: host, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		Logger: zerolog.New(logs).Level(zerolog.DebugLevel)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, discard{}) }()
	dockertest.Eventually(t, engineWait, func() error {
		if n := len(logs.lines("debug", "still unreachable")); n < 5 {
			return fmt.Errorf("%d quiet retries so far", n)
		}
		return nil
	})
	select {
	case err := <-done:
		t.Fatalf("Run gave up: %v", err)
	default:
	}
	errs := logs.lines("error", "")
	if len(errs) != 1 || !strings.Contains(errs[0], host) {
		t.Errorf("error lines = %q, want exactly one naming %s", errs, host)
	}
	if p.Synced() {
		t.Error("Synced() = true without an engine")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v after cancel, want nil", err)
	}
}

func TestListContainersForValidate(t *testing.T) {
	t.Parallel()
	cli := dockertest.Require(t)
	img := dockertest.EchoImage(t, cli)
	id := dockertest.Run(t, cli, dockertest.Spec{Image: img, Labels: map[string]string{"levee.enable": "true"}})
	cs, err := ListContainers(context.Background(), HostSpec{URL: cli.DaemonHost()})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if i > 0 && cs[i-1].Name > c.Name {
			t.Errorf("not ordered by name: %s before %s", cs[i-1].Name, c.Name)
		}
	}
	for _, c := range cs {
		if c.ID == id {
			if c.Labels["levee.enable"] != "true" || len(c.Networks) == 0 || !reflect.DeepEqual(c.ExposedPorts, []int{8080}) {
				t.Errorf("facts = %+v", c)
			}
			return
		}
	}
	t.Fatalf("container %.12s not listed", id)
}

func TestListContainersUnreachableNamesHost(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := ListContainers(ctx, HostSpec{URL: "tcp://127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "tcp://127.0.0.1:1") {
		t.Fatalf("err = %v, want an error naming tcp://127.0.0.1:1", err)
	}
	if !client.IsErrConnectionFailed(err) {
		t.Errorf("err = %v, want it to wrap the connection failure", err)
	}
}

// updateSink keeps the latest update.
type updateSink struct {
	mu     sync.Mutex
	latest config.SourceUpdate
}

func (s *updateSink) Update(u config.SourceUpdate) {
	s.mu.Lock()
	s.latest = u
	s.mu.Unlock()
}

// entrypoint returns the latest entrypoint serving host.
func (s *updateSink) entrypoint(host string) (config.Entrypoint, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ep := range s.latest.Entrypoints {
		for _, h := range ep.Hosts {
			if h == host {
				return ep, true
			}
		}
	}
	return config.Entrypoint{}, false
}

// TestEngineDefaultParserRoutesLabelledContainer runs the real label parser
// (the default parse step): a labelled container becomes an entrypoint whose
// backend is its address on the test network, and stopping it removes it.
func TestEngineDefaultParserRoutesLabelledContainer(t *testing.T) {
	t.Parallel()
	cli := dockertest.Require(t)
	img := dockertest.EchoImage(t, cli)
	netName := dockertest.Network(t, cli)
	sink := &updateSink{}
	p, err := New(Options{Host: cli.DaemonHost(), Logger: zerolog.New(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, sink) }()
	t.Cleanup(func() { cancel(); <-done; _ = p.Close() })

	host := strings.ToLower(dockertest.RunID(t)) + ".echo.test"
	id := dockertest.Run(t, cli, dockertest.Spec{
		Image:    img,
		Networks: []string{netName},
		Labels:   map[string]string{"levee.enable": "true", "levee.http.web.host": host},
	})
	ip := dockertest.IPs(t, cli, id)[netName]
	dockertest.Eventually(t, engineWait, func() error {
		ep, ok := sink.entrypoint(host)
		if !ok {
			return fmt.Errorf("no entrypoint for %s yet", host)
		}
		if len(ep.Backends) != 1 || ep.Backends[0].Address != ip || ep.Backends[0].Port != dockertest.EchoPort {
			return fmt.Errorf("backends = %+v, want %s:%d", ep.Backends, ip, dockertest.EchoPort)
		}
		if ep.Source != config.SourceDocker {
			return fmt.Errorf("source = %q", ep.Source)
		}
		return nil
	})
	dockertest.Stop(t, cli, id)
	dockertest.Eventually(t, engineWait, func() error {
		if ep, ok := sink.entrypoint(host); ok {
			return fmt.Errorf("entrypoint for %s still there: %+v", host, ep.Backends)
		}
		return nil
	})
}

// withoutIDs are nets with their engine IDs cleared, to compare with names
// and addresses the test knows.
func withoutIDs(nets []labels.Network) []labels.Network {
	out := make([]labels.Network, len(nets))
	for i, n := range nets {
		out[i] = labels.Network{Name: n.Name, IP: n.IP}
	}
	return out
}
