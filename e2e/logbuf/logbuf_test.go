package logbuf

import (
	"fmt"
	"sync"
	"testing"
)

// Lines finds the lines holding every piece of text asked for, while
// writers are still writing.
func TestLinesWhileWriting(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				fmt.Fprintf(&b, `{"level":"%s","n":%d}`+"\n", []string{"info", "warn"}[j%2], i)
			}
		})
	}
	wg.Wait()
	if got := len(b.Lines(`"level":"warn"`)); got != 200 {
		t.Errorf("%d warn lines, want 200", got)
	}
	if got := len(b.Lines(`"level":"warn"`, `"n":3`)); got != 25 {
		t.Errorf("%d warn lines of writer 3, want 25", got)
	}
	if got := len(b.Lines()); got != 400 {
		t.Errorf("%d lines in all, want 400 (no empty line)", got)
	}
}
