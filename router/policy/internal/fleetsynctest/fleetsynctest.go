// Package fleetsynctest has the scaffolding the tests of the fleet
// limits (package fleetsync and the policies built on it) share: a
// switch that makes a fake store fail and counts its calls, a recorder
// of the diagnostics a Reconciler reports and one of its log lines, and
// a loop of flushes to race requests against.
package fleetsynctest

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/levee-proxy/levee/diagnostics"
)

// Outage is a fake store's failure switch and call counter. The zero
// value answers. Embed it in a fake store and call Call first in each
// of the store's methods.
type Outage struct {
	mu    sync.Mutex
	err   error
	calls int
}

// Set makes the calls from now on fail with err; nil makes them answer.
func (o *Outage) Set(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.err = err
}

// Call counts one call and returns the error it must fail with (nil:
// answer).
func (o *Outage) Call() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls++
	return o.err
}

// Calls returns how many calls were counted.
func (o *Outage) Calls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls
}

// Diagnostics records the diagnostics reported to it: its Report is an
// OnDiagnostics.
type Diagnostics struct {
	mu  sync.Mutex
	got [][]diagnostics.Diagnostic
}

// Report records one change of the complete current diagnostics.
func (d *Diagnostics) Report(ds []diagnostics.Diagnostic) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, ds)
}

// Changes returns the changes recorded, oldest first.
func (d *Diagnostics) Changes() [][]diagnostics.Diagnostic {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]diagnostics.Diagnostic(nil), d.got...)
}

// Codes sums up the changes recorded: one word per change, oldest
// first, separated by spaces; a word is the change's codes joined by
// commas, or "-" for a change to no diagnostics. The store lost and
// back again is "W059 -".
func (d *Diagnostics) Codes() string {
	var words []string
	for _, ds := range d.Changes() {
		if len(ds) == 0 {
			words = append(words, "-")
			continue
		}
		codes := make([]string, len(ds))
		for i, x := range ds {
			codes[i] = string(x.Code)
		}
		words = append(words, strings.Join(codes, ","))
	}
	return strings.Join(words, " ")
}

// Log is a logger's output (zerolog.New(&log)), safe to read while the
// logger writes.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// Lines returns the JSON log lines written, decoded.
func (l *Log) Lines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(l.buf.String()) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// Events returns the lines' events, space-separated.
func (l *Log) Events(t testing.TB) string {
	t.Helper()
	var evs []string
	for _, m := range l.Lines(t) {
		ev, _ := m["event"].(string)
		evs = append(evs, ev)
	}
	return strings.Join(evs, " ")
}

// Said returns each line as "level event: message".
func (l *Log) Said(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, m := range l.Lines(t) {
		out = append(out, str(m["level"])+" "+str(m["event"])+": "+str(m["message"]))
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// CheckLostAndBack fails t unless log and diags hold exactly one loss of
// the store and its return: the log lines lost then back ("level event:
// message", see Said), and one change to the diagnostic w059 followed by
// one to none.
func CheckLostAndBack(t testing.TB, log *Log, diags *Diagnostics, lost, back string, w059 diagnostics.Diagnostic) {
	t.Helper()
	if got := log.Said(t); len(got) != 2 || got[0] != lost || got[1] != back {
		t.Errorf("log lines %q, want %q then %q", got, lost, back)
	}
	if ch := diags.Changes(); len(ch) != 2 || len(ch[0]) != 1 || ch[0][0] != w059 || len(ch[1]) != 0 {
		t.Errorf("diagnostics %+v, want %+v then none", ch, w059)
	}
}

// Flushing calls flush over and over in a goroutine, as a busy Run
// would, until the returned stop is called; stop returns once the last
// flush ended.
func Flushing(flush func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			flush(ctx)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}
