package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// logBufferSize bounds the lines waiting for a log file's writer. While
// the disk is slow or full the buffer fills; beyond it lines are dropped
// (and counted), so that a request never waits for a disk.
const logBufferSize = 1 << 20

// logFile is a log file written in the background: Write copies the line
// into a bounded buffer and returns at once; one goroutine writes the
// buffer to the file. Reopen (on SIGUSR1, after logrotate renamed the
// file) opens the path again and swaps the new file in; if it cannot be
// opened, the old one is kept.
type logFile struct {
	flag, path string

	mu      sync.Mutex
	pending []byte // lines not yet given to the writer
	closed  bool
	wake    chan struct{} // one pending signal to the writer
	stop    chan struct{}
	done    chan struct{}
	dropped atomic.Uint64 // lines dropped: buffer full or the write failed

	fileMu sync.Mutex // the writer and Reopen: f is swapped between writes
	f      *os.File
}

// openLogFile opens path for appending (created 0640 if missing) and
// starts its writer. The error names the flag and the path.
func openLogFile(flag, path string) (*logFile, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("%s (%s) %q: %w", flag, envName(flag[2:]), path, err)
	}
	l := &logFile{flag: flag, path: path, f: f, pending: make([]byte, 0, 64<<10),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l, nil
}

func openAppend(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
}

// Write queues one line (zerolog and the access log write a line per
// call). It never blocks on the disk and never fails: a line that does
// not fit in the buffer is dropped and counted.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	if l.closed || len(l.pending)+len(p) > logBufferSize {
		l.mu.Unlock()
		l.dropped.Add(1)
		return len(p), nil
	}
	l.pending = append(l.pending, p...)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default: // the writer is signalled already
	}
	return len(p), nil
}

// run writes what is pending until Close, then what is left.
func (l *logFile) run() {
	defer close(l.done)
	spare := make([]byte, 0, 64<<10)
	for {
		select {
		case <-l.wake:
		case <-l.stop:
			l.flush(spare) // Write takes no line once closed
			return
		}
		spare = l.flush(spare)
	}
}

// flush swaps the pending lines with spare and writes them; it returns
// the buffer to swap in next time.
func (l *logFile) flush(spare []byte) []byte {
	l.mu.Lock()
	out := l.pending
	l.pending = spare[:0]
	l.mu.Unlock()
	if len(out) == 0 {
		return out
	}
	l.fileMu.Lock()
	_, err := l.f.Write(out)
	l.fileMu.Unlock()
	if err != nil {
		// A full or failing disk: these lines are lost, counted.
		l.dropped.Add(uint64(bytes.Count(out, []byte{'\n'})))
	}
	return out[:0]
}

// Reopen opens the path again (logrotate moved the file away) and writes
// there from now on. If the path cannot be opened the old file is kept
// and the error says why.
func (l *logFile) Reopen() error {
	f, err := openAppend(l.path)
	if err != nil {
		return fmt.Errorf("reopening %s %q (still writing to the old file): %w", l.flag, l.path, err)
	}
	l.fileMu.Lock()
	old := l.f
	l.f = f
	l.fileMu.Unlock()
	return old.Close()
}

// Dropped is the number of lines lost so far.
func (l *logFile) Dropped() uint64 { return l.dropped.Load() }

// Close writes what is pending and closes the file; later lines are
// dropped.
func (l *logFile) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errors.New("log file closed twice")
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	l.fileMu.Lock()
	defer l.fileMu.Unlock()
	return l.f.Close()
}

// logOutputs are serve's log files, each nil when not asked for.
type logOutputs struct {
	process, access *logFile
}

// openLogOutputs opens --log-file and --access-log-file. A file that
// cannot be opened is a start-up error naming the flag and the path.
func openLogOutputs(cfg serveConfig) (*logOutputs, error) {
	var o logOutputs
	var err error
	if cfg.LogFile != "" {
		if o.process, err = openLogFile("--log-file", cfg.LogFile); err != nil {
			return nil, err
		}
	}
	if cfg.AccessLogFile != "" {
		if o.access, err = openLogFile("--access-log-file", cfg.AccessLogFile); err != nil {
			o.close()
			return nil, err
		}
	}
	return &o, nil
}

// files are the open log files.
func (o *logOutputs) files() []*logFile {
	var out []*logFile
	for _, f := range []*logFile{o.process, o.access} {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}

// reopen reopens every log file (SIGUSR1), returning the failures; a file
// that fails keeps writing to its old file.
func (o *logOutputs) reopen() error {
	var errs []error
	for _, f := range o.files() {
		errs = append(errs, f.Reopen())
	}
	return errors.Join(errs...)
}

// close flushes and closes every log file.
func (o *logOutputs) close() {
	for _, f := range o.files() {
		_ = f.Close()
	}
}

// reopenOn reopens the log files on every signal on sig until ctx ends. A
// file that fails to reopen keeps its old file; the error is logged.
func reopenOn(ctx context.Context, sig <-chan os.Signal, outs *logOutputs, log zerolog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		if err := outs.reopen(); err != nil {
			log.Error().Err(err).Msg("log files not all reopened")
			continue
		}
		log.Info().Int("files", len(outs.files())).Msg("log files reopened")
	}
}

// register exports the lines each log file dropped.
func (o *logOutputs) register(reg prometheus.Registerer) {
	for _, f := range o.files() {
		name := "process"
		if f == o.access {
			name = "access"
		}
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "levee_log_dropped_lines_total",
			Help:        "Log lines lost because the log file's buffer was full (a slow or stuck disk) or the write failed (a full disk).",
			ConstLabels: prometheus.Labels{"log": name},
		}, func() float64 { return float64(f.Dropped()) }))
	}
}
