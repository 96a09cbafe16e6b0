package breakerbench

import (
	"errors"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/sony/gobreaker/v2"
)

var errUpstream = errors.New("upstream failed")

// gobreaker's default ReadyToTrip opens after more than 5 consecutive
// failures; Levee's equivalent is consecutiveFailures=6 with a ratio rule
// that cannot fire first.
func leveeParams() breaker.Params {
	return breaker.Params{MinRequests: 1000, ConsecutiveFailures: 6, Cooldown: time.Minute}
}

func gobreakerSettings() gobreaker.Settings {
	return gobreaker.Settings{Name: "bench", Timeout: time.Minute}
}

// Both breakers trip on the same failure sequence and then reject.
func TestSameFailureSequenceTripsBoth(t *testing.T) {
	lv := breaker.NewWithParams("bench", leveeParams(), breaker.Options{})
	gb := gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{Name: "bench", Timeout: time.Minute})
	ts := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreakerSettings())

	seq := "FFSFFFFFF" // a success resets the streak; the 6th consecutive failure trips
	for i, c := range seq {
		var err error
		if c == 'F' {
			err = errUpstream
		}
		d := lv.Admit()
		if !d.Admitted {
			t.Fatalf("levee rejected request %d", i)
		}
		r := breaker.Success
		if err != nil {
			r = breaker.Failure
		}
		d.Token.Report(breaker.Outcome{Result: r})

		if _, gerr := gb.Execute(func() (struct{}, error) { return struct{}{}, err }); gerr != err {
			t.Fatalf("gobreaker request %d: %v", i, gerr)
		}
		done, aerr := ts.Allow()
		if aerr != nil {
			t.Fatalf("gobreaker two-step rejected request %d: %v", i, aerr)
		}
		done(err)

		wantOpen := i == len(seq)-1
		if got := lv.State() == breaker.Open; got != wantOpen {
			t.Fatalf("after %q levee open=%v", seq[:i+1], got)
		}
		if got := gb.State() == gobreaker.StateOpen; got != wantOpen {
			t.Fatalf("after %q gobreaker open=%v", seq[:i+1], got)
		}
		if got := ts.State() == gobreaker.StateOpen; got != wantOpen {
			t.Fatalf("after %q gobreaker two-step open=%v", seq[:i+1], got)
		}
	}
	if d := lv.Admit(); d.Admitted || d.RetryAfter != time.Minute {
		t.Fatalf("levee open decision %+v", d)
	}
	if _, err := gb.Execute(func() (struct{}, error) { return struct{}{}, nil }); !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("gobreaker open: %v", err)
	}
	if _, err := ts.Allow(); !errors.Is(err, gobreaker.ErrOpenState) {
		t.Fatalf("gobreaker two-step open: %v", err)
	}
}

type target struct {
	name string
	// do runs one request that succeeds; it reports whether it was admitted.
	newDo func(open bool) func() bool
}

func targets() []target {
	ok := breaker.Outcome{Result: breaker.Success}
	noop := func() (struct{}, error) { return struct{}{}, nil }
	return []target{
		{"levee", func(open bool) func() bool {
			b := breaker.NewWithParams("bench", leveeParams(), breaker.Options{})
			if open {
				trip(func() { b.Admit().Token.Report(breaker.Outcome{Result: breaker.Failure}) })
			}
			return func() bool {
				d := b.Admit()
				d.Token.Report(ok)
				return d.Admitted
			}
		}},
		{"gobreaker-execute", func(open bool) func() bool {
			b := gobreaker.NewCircuitBreaker[struct{}](gobreakerSettings())
			if open {
				trip(func() { _, _ = b.Execute(func() (struct{}, error) { return struct{}{}, errUpstream }) })
			}
			return func() bool {
				_, err := b.Execute(noop)
				return err == nil
			}
		}},
		{"gobreaker-twostep", func(open bool) func() bool {
			b := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreakerSettings())
			if open {
				trip(func() {
					if done, err := b.Allow(); err == nil {
						done(errUpstream)
					}
				})
			}
			return func() bool {
				done, err := b.Allow()
				if err != nil {
					return false
				}
				done(nil)
				return true
			}
		}},
	}
}

// trip fails six requests: enough for either breaker.
func trip(fail func()) {
	for range 6 {
		fail()
	}
}

func run(b *testing.B, open bool) {
	for _, tg := range targets() {
		b.Run(tg.name+"/single", func(b *testing.B) {
			do := tg.newDo(open)
			b.ReportAllocs()
			for b.Loop() {
				if do() == open {
					b.Fatal("unexpected admission decision")
				}
			}
		})
		b.Run(tg.name+"/parallel", func(b *testing.B) {
			do := tg.newDo(open)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					do()
				}
			})
		})
	}
}

// BenchmarkClosed is the success path: admit, run a request that succeeds,
// record the outcome.
func BenchmarkClosed(b *testing.B) { run(b, false) }

// BenchmarkOpen is the rejection path of an open breaker.
func BenchmarkOpen(b *testing.B) { run(b, true) }
