package breaker

import (
	"testing"
	"time"
)

// The success path: one admission and one report per operation.
func BenchmarkAdmitReport(b *testing.B) {
	windows := []struct {
		name string
		p    Params
	}{
		{"count", Params{MinRequests: 100}},
		{"time", Params{MinRequests: 100, Window: 10 * time.Second}},
	}
	ok := Outcome{Result: Success}
	for _, w := range windows {
		b.Run(w.name+"/single", func(b *testing.B) {
			br := NewWithParams("bench", w.p, Options{})
			b.ReportAllocs()
			for b.Loop() {
				br.Admit().Token.Report(ok)
			}
		})
		b.Run(w.name+"/parallel", func(b *testing.B) {
			br := NewWithParams("bench", w.p, Options{})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					br.Admit().Token.Report(ok)
				}
			})
		})
	}
}

// Rejection while open: a value decision, no error allocated. "tripped"
// reads the clock to compute Retry-After; "forced" does not.
func BenchmarkRejectOpen(b *testing.B) {
	open := func(forced bool) *Breaker {
		br := NewWithParams("bench", Params{MinRequests: 1, Cooldown: time.Hour}, Options{})
		if forced {
			br.ForceOpen()
		} else {
			br.Admit().Token.Report(Outcome{Result: Failure})
		}
		if br.State() != Open {
			b.Fatal("not open")
		}
		return br
	}
	for _, forced := range []bool{false, true} {
		name := "tripped"
		if forced {
			name = "forced"
		}
		b.Run(name+"/single", func(b *testing.B) {
			br := open(forced)
			b.ReportAllocs()
			for b.Loop() {
				if br.Admit().Admitted {
					b.Fatal("admitted while open")
				}
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			br := open(forced)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					br.Admit()
				}
			})
		})
	}
}

// The convenience API's success path.
func BenchmarkCanExecuteRecord(b *testing.B) {
	br := New("bench", 5, time.Second)
	b.ReportAllocs()
	for b.Loop() {
		if br.CanExecute() {
			br.RecordSuccess()
		}
	}
}
