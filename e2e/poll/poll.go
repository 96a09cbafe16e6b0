// Package poll waits, in tests, for a condition that another goroutine or
// process makes true and that no event announces: a metric reaching a
// value, a file gaining a line, a backend marked down. It asks at a short
// interval until the condition holds or a deadline passes, and then fails
// the test naming what was awaited (and the last error, for UntilNil).
//
// Where an event or a channel tells when the condition holds, wait on it
// instead: polling is for conditions only observable from outside. The
// deadline is a bound, never a measurement: pick it generously (the
// machines tests run on are shared), since a condition that holds ends the
// wait at once.
package poll

import (
	"testing"
	"time"
)

// Interval is how often a condition is asked.
const Interval = 5 * time.Millisecond

// Until waits until cond holds, failing t (Fatal) when timeout passes
// first.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not so within %v: %s", timeout, what)
		}
		time.Sleep(Interval) // polling interval, not synchronisation
	}
}

// UntilNil waits until check returns nil, failing t (Fatal) with check's
// last error when timeout passes first.
func UntilNil(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not so within %v: %s: %v", timeout, what, err)
		}
		time.Sleep(Interval) // polling interval, not synchronisation
	}
}
