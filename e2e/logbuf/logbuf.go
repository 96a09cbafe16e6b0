// Package logbuf is a log sink for tests: a Buffer that the logger's
// goroutines may write while the test reads it, whole (String) or as the
// lines holding given text (Lines), as a test asks what was logged.
package logbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads; the zero
// value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Lines returns the non-empty lines written so far that hold every one
// of want.
func (b *Buffer) Lines(want ...string) []string {
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		ok := l != ""
		for _, w := range want {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}
