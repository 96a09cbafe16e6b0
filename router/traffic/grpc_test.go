package traffic

import (
	"fmt"
	"testing"
)

// A tally names at most MaxGRPCMethods methods, most called first; calls
// to any further method are counted under other, last; a code outside
// 0-16 is counted as no status.
func TestGRPCTallyBoundsMethods(t *testing.T) {
	var tally GRPCTally
	if got := tally.Read(); len(got) != 0 {
		t.Fatalf("empty tally read %v", got)
	}
	for i := range MaxGRPCMethods + 5 {
		tally.Record(fmt.Sprintf("pkg.S/M%02d", i), 0)
	}
	tally.Record("pkg.S/M03", 14)
	tally.Record("pkg.S/M03", -1)
	tally.Record("pkg.S/M03", 99)
	tally.Record("pkg.S/Late", 14)
	got := tally.Read()
	if len(got) != MaxGRPCMethods+1 {
		t.Fatalf("%d methods, want %d named and other", len(got), MaxGRPCMethods)
	}
	first, last := got[0], got[len(got)-1]
	if first.Method != "pkg.S/M03" || first.Total != 4 || first.Counts[0] != 1 || first.Counts[14] != 1 || first.Counts[GRPCNoStatus] != 2 {
		t.Errorf("most called %+v, want pkg.S/M03: 1 OK, 1 UNAVAILABLE, 2 without status", first)
	}
	if got[1].Method != "pkg.S/M00" {
		t.Errorf("second %q, want pkg.S/M00 (ties by name)", got[1].Method)
	}
	if last.Method != GRPCOtherMethod || last.Total != 6 || last.Counts[0] != 5 || last.Counts[14] != 1 {
		t.Errorf("last %+v, want other with the 6 calls past the bound", last)
	}
}

// Counting a method already seen allocates nothing, nor does one past the
// bound.
func TestGRPCTallyRecordDoesNotAllocate(t *testing.T) {
	var tally GRPCTally
	tally.Record("pkg.S/M", 0)
	if n := testing.AllocsPerRun(100, func() { tally.Record("pkg.S/M", 0) }); n != 0 {
		t.Errorf("%v allocations per seen method", n)
	}
	for i := range MaxGRPCMethods {
		tally.Record(fmt.Sprintf("pkg.S/N%d", i), 0)
	}
	if n := testing.AllocsPerRun(100, func() { tally.Record("pkg.S/Unseen", 2) }); n != 0 {
		t.Errorf("%v allocations per method past the bound", n)
	}
}

func BenchmarkGRPCTallyRecord(b *testing.B) {
	var tally GRPCTally
	for i := range 8 {
		tally.Record(fmt.Sprintf("pkg.S/M%d", i), 0)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tally.Record("pkg.S/M3", 0)
		}
	})
}
