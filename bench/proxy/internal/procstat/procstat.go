// Package procstat reads a process's CPU time from Linux's /proc, for the
// load tools of bench/proxy that report a server's CPU per request.
package procstat

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture Go builds for (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// CPUSeconds is the user + system CPU time process pid has used, from
// fields 14 and 15 of /proc/PID/stat (proc(5)).
func CPUSeconds(pid int) (float64, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("procstat: reading %s: %w", path, err)
	}
	return parseStat(string(b), path)
}

// parseStat reads utime + stime from the text of a stat file. The command
// name, field 2, is in parentheses and may hold spaces and parentheses:
// the fields are counted after its last ')'.
func parseStat(s, path string) (float64, error) {
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 > len(s) {
		return 0, fmt.Errorf("procstat: %s: no command name in %q", path, s)
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("procstat: %s: %d fields after the command name, want at least 13", path, len(f))
	}
	u, err := strconv.ParseFloat(f[11], 64)
	if err != nil {
		return 0, fmt.Errorf("procstat: %s: utime %q: %w", path, f[11], err)
	}
	st, err := strconv.ParseFloat(f[12], 64)
	if err != nil {
		return 0, fmt.Errorf("procstat: %s: stime %q: %w", path, f[12], err)
	}
	return (u + st) / clockTicks, nil
}
