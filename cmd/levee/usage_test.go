package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"runtime"
	"strings"
	"testing"
	"time"
)

// A mistyped flag is one line naming the closest flag, not the whole
// usage, for serve and validate.
func TestUnknownFlagIsOneLineWithDidYouMean(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--dial-timout", "5"}, "levee: unknown flag --dial-timout: did you mean --dial-timeout? (levee serve --help lists the flags)"},
		{[]string{"--acme-emial", "a@b.c"}, "did you mean --acme-email?"},
		{[]string{"validate", "--frmat", "json"}, "levee validate: unknown flag --frmat: did you mean --format? (levee validate --help lists the flags)"},
		{[]string{"serve", "--no-such-thing"}, "levee: unknown flag --no-such-thing (levee serve --help lists the flags)"},
	} {
		code, out, errOut := runArgs(c.args...)
		lines := strings.Split(strings.TrimSpace(errOut), "\n")
		if code != 2 || out != "" || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("levee %v: exit %d, stderr %q; want 2 and one line with %q", c.args, code, errOut, c.want)
		}
	}
}

// Duration flags and their variables take bare seconds, as labels do, and
// every duration flag does.
func TestDurationFlagsTakeBareSeconds(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--dial-timeout", "5", "--route-grace", "1500ms"}, envOf(map[string]string{"LEVEE_SHUTDOWN_TIMEOUT": "7"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DialTimeout != 5*time.Second || cfg.RouteGrace != 1500*time.Millisecond || cfg.ShutdownTimeout != 7*time.Second {
		t.Errorf("dial %s, grace %s, shutdown %s", cfg.DialTimeout, cfg.RouteGrace, cfg.ShutdownTimeout)
	}
	if _, err := parseServeFlags([]string{"--dial-timeout", "soon"}, envOf(nil), &bytes.Buffer{}); err == nil ||
		!strings.Contains(err.Error(), "whole seconds") || strings.Contains(err.Error(), "parse error") {
		t.Errorf("bad duration: %v", err)
	}
	var c serveConfig
	newServeFlags(&c, &bytes.Buffer{}).VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, isDuration := g.Get().(time.Duration); isDuration {
				if err := f.Value.Set("3"); err != nil {
					t.Errorf("--%s 3: %v", f.Name, err)
				}
			}
		}
	})
}

// serve --help lists the flags by group, each with its LEVEE_* variable;
// no flag is left out of a group.
func TestServeUsageGroupsFlagsWithTheirVariables(t *testing.T) {
	code, _, usage := runArgs("serve", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, g := range serveFlagGroups {
		if !strings.Contains(usage, "\n"+g.title+":\n") {
			t.Errorf("no group %q in\n%s", g.title, usage)
		}
	}
	if strings.Contains(usage, "\nOther:\n") {
		t.Errorf("flags outside every group (add them to serveFlagGroups):\n%s", usage)
	}
	var c serveConfig
	newServeFlags(&c, &bytes.Buffer{}).VisitAll(func(f *flag.Flag) {
		if n := strings.Count(usage, "\n  --"+f.Name+" "); n != 1 {
			t.Errorf("--%s listed %d times", f.Name, n)
		}
		if !strings.Contains(usage, "("+envName(f.Name)) {
			t.Errorf("--%s: no %s in the usage", f.Name, envName(f.Name))
		}
	})
	if !strings.Contains(usage, "--dial-timeout duration  (LEVEE_DIAL_TIMEOUT, default ") {
		t.Errorf("dial-timeout line:\n%s", usage)
	}
}

// A version from git describe holds the commit: it is printed once.
func TestVersionNamesTheCommitOnce(t *testing.T) {
	tail := ", " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"
	for _, c := range [][3]string{
		{"294e26e", "294e26e", "levee 294e26e (" + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"},
		{"v1.2.0-3-g294e26e-dirty", "294e26e", "levee v1.2.0-3-g294e26e-dirty (" + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")"},
		{"v1.2.0", "294e26e", "levee v1.2.0 (commit 294e26e" + tail},
		{"dev", "unknown", "levee dev (commit unknown" + tail},
	} {
		if got := formatVersion(c[0], c[1]); got != c[2] {
			t.Errorf("formatVersion(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
		if got := formatVersion(c[0], c[1]); c[1] != "unknown" && strings.Count(got, c[1]) != 1 {
			t.Errorf("%q names the commit %d times", got, strings.Count(got, c[1]))
		}
	}
}

// Log fields holding a length of time name their unit: serve's shutdown
// line says timeout_ms.
func TestShutdownLogNamesTheUnit(t *testing.T) {
	var out lockedBuffer
	var errOut bytes.Buffer
	if code := run(cancelled(), serveArgs(t, "--shutdown-timeout", "5"), &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil || !strings.HasPrefix(l["message"].(string), "shutting down") {
			continue
		}
		if l["timeout_ms"] != 5000.0 || l["timeout"] != nil {
			t.Fatalf("shutdown line %s: want timeout_ms 5000", line)
		}
		return
	}
	t.Fatalf("no shutdown line in %s", out.String())
}
