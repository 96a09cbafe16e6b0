package file

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/e2e/poll"
	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/router/config"
)

// sink records the provider's updates.
type sink struct {
	mu      sync.Mutex
	updates []config.SourceUpdate
}

func (s *sink) Update(u config.SourceUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, u)
}

func (s *sink) last() (config.SourceUpdate, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.updates) == 0 {
		return config.SourceUpdate{}, 0
	}
	return s.updates[len(s.updates)-1], len(s.updates)
}

// changeDeadline is how long a test waits for a change to apply. The
// provider applies one within its debounce (here 20ms) of the event; the
// margin is for a loaded machine. Rescans are an hour apart in these
// tests, so only the watch can meet it.
const changeDeadline = 2 * time.Second

// eventually polls check until it passes or the deadline is reached.
func eventually(t *testing.T, deadline time.Duration, check func() error) {
	t.Helper()
	poll.UntilNil(t, deadline, "the provider's state", check)
}

func start(t *testing.T, opts Options) (*Provider, *sink) {
	t.Helper()
	if opts.Debounce == 0 {
		opts.Debounce = 20 * time.Millisecond
	}
	if opts.Rescan == 0 {
		opts.Rescan = time.Hour
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.Run(ctx, s) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, changeDeadline, func() error {
		if !p.Synced() {
			return fmt.Errorf("not synced")
		}
		return nil
	})
	return p, s
}

func entry(name, host string) string {
	return fmt.Sprintf("  - name: %s\n    config: {hostnames: [%s]}\n    backends: [{address: 10.0.0.1, port: 8080}]\n", name, host)
}

// state renders an update as "id=host ..." and "CODE:object" lists.
func state(u config.SourceUpdate) (eps, diags string) {
	var e, d []string
	for _, ep := range u.Entrypoints {
		e = append(e, ep.ID+"="+strings.Join(ep.Hosts, ","))
	}
	for _, x := range u.Diagnostics {
		d = append(d, string(x.Code)+":"+filepath.Base(x.Source.ObjectName)+":"+x.Key)
	}
	slices.Sort(e)
	slices.Sort(d)
	return strings.Join(e, " "), strings.Join(d, " ")
}

func waitState(t *testing.T, s *sink, wantEps, wantDiags string) {
	t.Helper()
	eventually(t, changeDeadline, func() error {
		u, _ := s.last()
		eps, diags := state(u)
		if eps != wantEps || diags != wantDiags {
			return fmt.Errorf("entrypoints %q diagnostics %q, want %q and %q", eps, diags, wantEps, wantDiags)
		}
		return nil
	})
}

// writeAtomic writes as editors and deploy tools do: a temp file renamed
// over the name.
func writeAtomic(t *testing.T, path, body string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A file added, changed in place, replaced by rename, broken, fixed and
// removed: each change applies through the watch, a broken file keeps its
// last good entrypoints with W037 naming the line, and the other file is
// never touched.
func TestWatchAppliesChanges(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	writeAtomic(t, a, "entrypoints:\n"+entry("a", "a.test"))
	_, s := start(t, Options{Dirs: []string{dir}})
	waitState(t, s, "a@file=a.test", "")

	if err := os.WriteFile(b, []byte("entrypoints:\n"+entry("b", "b.test")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "a@file=a.test b@file=b.test", "")

	if err := os.WriteFile(b, []byte("entrypoints:\n"+entry("b", "b2.test")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "a@file=a.test b@file=b2.test", "")

	writeAtomic(t, b, "entrypoints:\n"+entry("b", "b3.test")+entry("c", "c.test"))
	waitState(t, s, "a@file=a.test b@file=b3.test c@file=c.test", "")

	writeAtomic(t, b, "entrypoints:\n"+entry("b", "b4.test")+"  - name: [unclosed\n")
	waitState(t, s, "a@file=a.test b@file=b3.test c@file=c.test", "W037:b.yaml:line 5")
	u, _ := s.last()
	for _, d := range u.Diagnostics {
		if d.Code == diagnostics.ConfigFileMalformed && (d.Source.ObjectName != b || d.Fallback != "its 2 last good entrypoints") {
			t.Errorf("W037 %+v: want the file named and its last good entrypoints kept", d)
		}
	}

	writeAtomic(t, b, "entrypoints:\n"+entry("b", "b5.test"))
	waitState(t, s, "a@file=a.test b@file=b5.test", "")

	if err := os.Remove(b); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "a@file=a.test", "")
}

// An entrypoint changed into one the API would refuse keeps its last good
// version, with W038; its neighbours change as written.
func TestRefusedEntrypointKeepsLastGood(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "r.yaml")
	writeAtomic(t, f, "entrypoints:\n"+entry("web", "web.test")+entry("api", "api.test"))
	_, s := start(t, Options{Dirs: []string{dir}})
	waitState(t, s, "api@file=api.test web@file=web.test", "")

	writeAtomic(t, f, "entrypoints:\n"+entry("web", `"https://web.test/"`)+entry("api", "api2.test"))
	waitState(t, s, "api@file=api2.test web@file=web.test", "E002:r.yaml:config.hostnames W032:r.yaml:config.hostnames W038:r.yaml:")
}

// A Kubernetes ConfigMap volume: the keys are symlinks through ..data, and
// an update swaps ..data to a new directory by a rename.
func TestConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	version := func(n int, host string) {
		ts := filepath.Join(dir, fmt.Sprintf("..v%d", n))
		if err := os.Mkdir(ts, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ts, "routes.yaml"), []byte("entrypoints:\n"+entry("cm", host)), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	version(1, "one.test")
	if err := os.Symlink("..data/routes.yaml", filepath.Join(dir, "routes.yaml")); err != nil {
		t.Fatal(err)
	}
	_, s := start(t, Options{Dirs: []string{dir}})
	waitState(t, s, "cm@file=one.test", "")
	version(2, "two.test")
	if err := os.RemoveAll(filepath.Join(dir, "..v1")); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "cm@file=two.test", "")
}

// A named file is watched through its directory (a rename over it is
// seen); one that goes missing keeps its entrypoints with W026.
func TestNamedFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "levee.conf")
	writeAtomic(t, f, `{"name":"n","config":{"hostnames":["n.test"]},"backends":[{"address":"10.0.0.1","port":80}]}`)
	_, s := start(t, Options{Files: []string{f}})
	waitState(t, s, "n@file=n.test", "")
	writeAtomic(t, f, `{"name":"n","config":{"hostnames":["n2.test"]},"backends":[{"address":"10.0.0.1","port":80}]}`)
	waitState(t, s, "n@file=n2.test", "")
	if err := os.Remove(f); err != nil {
		t.Fatal(err)
	}
	waitState(t, s, "n@file=n2.test", "W026:levee.conf:")
}

// Status and metrics: a missing directory is disconnected, with the
// error; once it exists (found by the rescan, since nothing watches it
// yet) the provider is connected and reads its files.
func TestStatusFollowsTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "routes.d")
	reg := prometheus.NewRegistry()
	p, s := start(t, Options{Dirs: []string{dir}, Rescan: 50 * time.Millisecond, Registerer: reg})
	st := p.Status()
	if st.State != provider.StateDisconnected || !strings.Contains(st.LastError, dir) {
		t.Fatalf("status %+v, want disconnected naming %s", st, dir)
	}
	if v := gauge(t, reg, "levee_provider_connected", ""); v != 0 {
		t.Errorf("levee_provider_connected = %v, want 0", v)
	}
	waitState(t, s, "", "W026:routes.d:")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, filepath.Join(dir, "x.yaml"), "entrypoints:\n"+entry("x", "x.test"))
	waitState(t, s, "x@file=x.test", "")
	eventually(t, changeDeadline, func() error {
		if st := p.Status(); st.State != provider.StateConnected || st.LastError != "" || st.Reconnects != 1 {
			return fmt.Errorf("status %+v, want connected after one reconnect", st)
		}
		if v := gauge(t, reg, "levee_provider_connected", ""); v != 1 {
			return fmt.Errorf("levee_provider_connected = %v, want 1", v)
		}
		return nil
	})
	if v := gauge(t, reg, "levee_provider_state", "connected"); v != 1 {
		t.Errorf(`levee_provider_state{state="connected"} = %v`, v)
	}
}

// A rescan that finds nothing changed sends nothing: the router is not
// rebuilt every Rescan.
func TestNoUpdateWithoutChange(t *testing.T) {
	dir := t.TempDir()
	writeAtomic(t, filepath.Join(dir, "a.yaml"), "entrypoints:\n"+entry("a", "a.test"))
	p, err := New(Options{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{}
	p.refresh(nil, s)
	sent := p.sent
	p.refresh(nil, s)
	p.refresh(nil, s)
	if _, n := s.last(); n != 1 {
		t.Fatalf("%d updates after reading unchanged files three times, want 1", n)
	}
	if len(sent.Entrypoints) != 1 || !sent.Entrypoints[0].Created.Equal(p.sent.Entrypoints[0].Created) {
		t.Fatal("created moved between reads")
	}
}

// gauge reads a provider="file" series of reg (with state=state when
// given).
func gauge(t *testing.T, reg *prometheus.Registry, name, state string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == "file" && labels["state"] == state {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s{provider=\"file\",state=%q}", name, state)
	return 0
}
