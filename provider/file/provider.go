package file

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider"
	"github.com/levee-proxy/levee/router/config"
)

// Defaults of Options.
const (
	DefaultDebounce = 100 * time.Millisecond
	DefaultRescan   = 5 * time.Second
)

// Sink receives the provider's complete current output.
type Sink interface {
	Update(config.SourceUpdate)
}

// Options configure a Provider.
type Options struct {
	// Dirs are directories whose *.yaml, *.yml and *.json files are read
	// (not their sub-directories, nor hidden names).
	Dirs []string
	// Files are files read whatever their names; one with another
	// extension is JSON when it starts with { or [, else YAML.
	Files []string
	// Debounce is how long after a change the files are read again, so
	// that the events of one write (or of an editor's rename) cost one
	// read (default 100ms).
	Debounce time.Duration
	// Rescan is the period of the safety-net read of every file, for
	// changes no event announced (a file system without notifications)
	// (default 5s).
	Rescan time.Duration
	// MaxFileBytes bounds a file (default DefaultMaxFileBytes).
	MaxFileBytes int64
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives the provider's own events (watch problems).
	Logger zerolog.Logger
	// Registerer gets the levee_provider_* series labelled
	// provider="file"; nil registers none.
	Registerer prometheus.Registerer
}

// Status is a snapshot of the provider's hold on its files, for the API.
type Status struct {
	// State is connecting before the first read, connected while every
	// directory is watched and was listed, and disconnected while one
	// could not be listed or watched (the files are still read every
	// Rescan, and the last good entrypoints of those that cannot be
	// read keep being routed).
	State provider.State
	// Since is when the state last changed between connected and not.
	Since time.Time
	// LastError says what is not watched or listed; "" when connected.
	LastError string
	// Reconnects counts the times the provider became connected again.
	Reconnects uint64
}

// Provider watches config files and hands the sink their entrypoints.
type Provider struct {
	opts   Options
	loader *loader
	log    zerolog.Logger

	metrics *provider.ConnectionMetrics

	synced atomic.Bool
	mu     sync.Mutex
	status Status

	sent     config.SourceUpdate
	everSent bool
}

// New checks the options and registers the metrics.
func New(opts Options) (*Provider, error) {
	if len(opts.Dirs) == 0 && len(opts.Files) == 0 {
		return nil, errors.New("file provider: no directory and no file given")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.Rescan <= 0 {
		opts.Rescan = DefaultRescan
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.Dirs, opts.Files = cleanPaths(opts.Dirs), cleanPaths(opts.Files)
	p := &Provider{opts: opts, log: opts.Logger,
		loader: newLoader(opts.Dirs, opts.Files, opts.MaxFileBytes, opts.Now)}
	p.status = Status{State: provider.StateConnecting, Since: opts.Now()}
	m, err := provider.NewConnectionMetrics(opts.Registerer, config.SourceFile)
	if err != nil {
		return nil, err
	}
	p.metrics = m
	return p, nil
}

// Synced reports whether the first read has reached the sink.
func (p *Provider) Synced() bool { return p.synced.Load() }

// Status reports the provider's state; safe from any goroutine.
func (p *Provider) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.status
}

// Run reads the files, hands the sink their entrypoints, and does so again
// after every change until ctx ends. Without file notifications (the
// watcher cannot be made) it reads every Rescan only.
func (p *Provider) Run(ctx context.Context, sink Sink) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		p.log.Error().Err(err).Msg("file provider: no file notifications; reading the files every rescan only")
		w = nil
	} else {
		defer w.Close()
	}
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w != nil {
		events, errs = w.Events, w.Errors
	}
	p.refresh(w, sink)
	rescan := time.NewTicker(p.opts.Rescan)
	defer rescan.Stop()
	debounce := time.NewTimer(p.opts.Debounce)
	debounce.Stop()
	armed := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			p.log.Debug().Str("file", ev.Name).Str("op", ev.Op.String()).Msg("file provider: change")
			if !armed {
				debounce.Reset(p.opts.Debounce)
				armed = true
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			// An overflow lost events: read everything now.
			p.log.Warn().Err(err).Msg("file provider: watch error; reading the files again")
			if !armed {
				debounce.Reset(p.opts.Debounce)
				armed = true
			}
		case <-debounce.C:
			armed = false
			p.refresh(w, sink)
		case <-rescan.C:
			p.refresh(w, sink)
		}
	}
}

// refresh brings the watches up to date, reads every file and sends the
// result when it changed (the first one always).
func (p *Provider) refresh(w *fsnotify.Watcher, sink Sink) {
	res := p.loader.scan()
	problem := res.problem
	if w == nil {
		problem = cmpOr(problem, errors.New("no file notifications (reading the files every rescan)"))
	} else if err := p.watch(w); err != nil {
		problem = cmpOr(problem, err)
	}
	p.setState(problem)
	u := config.SourceUpdate{Source: config.SourceFile, Entrypoints: res.entrypoints, Diagnostics: res.diags, Policies: res.policies}
	if p.everSent && reflect.DeepEqual(u, p.sent) {
		return
	}
	sink.Update(u)
	p.sent, p.everSent = u, true
	p.synced.Store(true)
	p.log.Debug().Int("entrypoints", len(u.Entrypoints)).Int("diagnostics", len(u.Diagnostics)).Msg("file provider: update sent")
}

// watch makes the watched directories those the files need: each config
// directory, the directory of each named file (an editor replaces a file
// by renaming another over it, which a watch on the file itself would not
// follow), and the directory each symlink points into.
func (p *Provider) watch(w *fsnotify.Watcher) error {
	want := slices.Clone(p.opts.Dirs)
	for _, f := range p.opts.Files {
		want = append(want, filepath.Dir(f))
	}
	for path := range p.loader.state {
		if real, err := filepath.EvalSymlinks(path); err == nil && real != path {
			want = append(want, filepath.Dir(real))
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	var errs []error
	for _, dir := range want {
		if err := w.Add(dir); err != nil {
			errs = append(errs, fmt.Errorf("watch %s: %w", dir, err))
		}
	}
	for _, dir := range w.WatchList() {
		if _, ok := slices.BinarySearch(want, dir); !ok {
			_ = w.Remove(dir)
		}
	}
	return errors.Join(errs...)
}

func (p *Provider) setState(problem error) {
	s := provider.StateConnected
	if problem != nil {
		s = provider.StateDisconnected
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if (s == provider.StateConnected) != (p.status.State == provider.StateConnected) {
		p.status.Since = p.opts.Now()
		if s == provider.StateConnected && p.status.State == provider.StateDisconnected {
			p.status.Reconnects++
		}
		if problem != nil {
			p.log.Warn().Err(problem).Msg("file provider: not every config directory is watched and read")
		}
	}
	p.status.State = s
	p.status.LastError = ""
	if problem != nil {
		p.status.LastError = problem.Error()
	}
	p.metrics.Set(s)
}

// Entry is one entrypoint Load found, with the file it came from.
type Entry struct {
	File       string
	Entrypoint config.Entrypoint
}

// Loaded is what one read of the config files gives: what serve would
// route, with its diagnostics.
type Loaded struct {
	Entries     []Entry
	Diagnostics []diagnostics.Diagnostic
	// Policies are the files' named policies.
	Policies []config.Policy
}

// Load reads the directories and files of opts once, as the provider
// does (`levee validate --config-dir`). A directory that cannot be listed
// is a W026 diagnostic, as in serve.
func Load(opts Options) Loaded {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	l := newLoader(cleanPaths(opts.Dirs), cleanPaths(opts.Files), opts.MaxFileBytes, opts.Now)
	res := l.scan()
	out := Loaded{Diagnostics: res.diags, Policies: res.policies}
	for _, ep := range res.entrypoints {
		out.Entries = append(out.Entries, Entry{File: res.fileOf[ep.ID], Entrypoint: ep})
	}
	return out
}

func cleanPaths(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, filepath.Clean(p))
	}
	return out
}
