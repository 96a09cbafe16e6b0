package procstat

import (
	"os"
	"testing"
)

// utime and stime are fields 14 and 15, counted after the command name
// even when that name holds spaces and parentheses.
func TestParseStatCountsAfterTheCommandName(t *testing.T) {
	s := "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 1 0 1 0 0\n"
	got, err := parseStat(s, "test")
	if err != nil {
		t.Fatal(err)
	}
	if got != 4 {
		t.Errorf("got %v s, want 4 (250 + 150 ticks)", got)
	}
}

// A truncated stat file is an error naming the file, not a zero.
func TestParseStatRejectsTruncatedText(t *testing.T) {
	if _, err := parseStat("42 (x) S 1 2", "short"); err == nil {
		t.Fatal("no error for a truncated stat line")
	}
}

// The running test process has a readable, non-negative CPU time.
func TestCPUSecondsOfThisProcess(t *testing.T) {
	s, err := CPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s < 0 {
		t.Errorf("CPU %v s", s)
	}
}
