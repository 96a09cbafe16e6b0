package poll

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a Fatal instead of ending the
// goroutine's test.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	panic(r)
}

func run(f func(tb testing.TB)) (fatal string) {
	r := &recorder{}
	defer func() {
		if p := recover(); p != nil && p != r {
			panic(p)
		}
		fatal = r.fatal
	}()
	f(r)
	return ""
}

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	var n atomic.Int32
	if msg := run(func(tb testing.TB) {
		Until(tb, 10*time.Second, "the third ask", func() bool { return n.Add(1) == 3 })
	}); msg != "" || n.Load() != 3 {
		t.Fatalf("asked %d times, failed %q; want 3 asks and no failure", n.Load(), msg)
	}
}

func TestUntilFailsNamingWhatWasAwaited(t *testing.T) {
	msg := run(func(tb testing.TB) { Until(tb, 20*time.Millisecond, "the backend down", func() bool { return false }) })
	if !strings.Contains(msg, "the backend down") || !strings.Contains(msg, "20ms") {
		t.Fatalf("failure %q, want it to name what was awaited and the deadline", msg)
	}
}

func TestUntilNilFailsWithTheLastError(t *testing.T) {
	var n atomic.Int32
	msg := run(func(tb testing.TB) {
		UntilNil(tb, 20*time.Millisecond, "the route", func() error {
			if n.Add(1) == 1 {
				return errors.New("first error")
			}
			return errors.New("latest error")
		})
	})
	if !strings.Contains(msg, "the route") || !strings.Contains(msg, "latest error") {
		t.Fatalf("failure %q, want what was awaited and the last error", msg)
	}
}
