package main

import (
	"bytes"
	"context"
	"flag"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// runArgs runs levee's main logic with args and returns the exit code,
// stdout and stderr.
func runArgs(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut, envOf(nil))
	return code, out.String(), errOut.String()
}

// The top-level help lists every command, one line each, and points to the
// serve flags instead of printing them.
func TestHelpListsEveryCommand(t *testing.T) {
	for _, arg := range []string{"help", "-h", "-help", "--help"} {
		code, out, errOut := runArgs(arg)
		if code != 0 || errOut != "" {
			t.Errorf("levee %s: exit %d, stderr %q; want 0 and nothing", arg, code, errOut)
		}
		for _, cmd := range []string{"serve", "validate", "explain", "health", "version", "help"} {
			if !strings.Contains(out, "\n  levee "+cmd) && !strings.Contains(out, "\n  levee ["+cmd+"]") {
				t.Errorf("levee %s does not list the %s command:\n%s", arg, cmd, out)
			}
		}
		if !strings.Contains(out, "levee serve --help") {
			t.Errorf("levee %s does not say where the serve flags are:\n%s", arg, out)
		}
		var cfg serveConfig
		newServeFlags(&cfg, &bytes.Buffer{}).VisitAll(func(f *flag.Flag) {
			if strings.Contains(out, f.Usage) {
				t.Errorf("levee %s prints the serve flag --%s:\n%s", arg, f.Name, out)
			}
		})
	}
}

// `levee serve --help` is where the serve flags are.
func TestServeHelpListsTheFlags(t *testing.T) {
	code, _, errOut := runArgs("serve", "--help")
	if code != 0 || !strings.Contains(errOut, "-http-listen") || !strings.Contains(errOut, "-api-token") {
		t.Fatalf("levee serve --help: exit %d, output %q; want 0 and the serve flags", code, errOut)
	}
}

// version, --version, -version and -v all print the version, the commit and
// the Go version; in a test binary they are the unstamped defaults.
func TestVersionSpellings(t *testing.T) {
	want := "levee dev (commit unknown, " + runtime.Version() + ", " + runtime.GOOS + "/" + runtime.GOARCH + ")\n"
	for _, arg := range []string{"version", "--version", "-version", "-v"} {
		code, out, errOut := runArgs(arg)
		if code != 0 || out != want || errOut != "" {
			t.Errorf("levee %s: exit %d, stdout %q, stderr %q; want 0 and %q", arg, code, out, errOut, want)
		}
	}
	if code, _, errOut := runArgs("version", "now"); code != 2 || !strings.Contains(errOut, `"now"`) {
		t.Errorf("levee version now: exit %d, stderr %q; want 2 naming the argument", code, errOut)
	}
}

// A first argument that is a flag other than help or version still means
// serve, so `levee --http-listen :80` keeps working.
func TestCommandDefaultsToServe(t *testing.T) {
	cases := []struct {
		args     []string
		wantCmd  string
		wantArgs []string
	}{
		{nil, "serve", nil},
		{[]string{"--http-listen", ":80"}, "serve", []string{"--http-listen", ":80"}},
		{[]string{"-v"}, "version", []string{}},
		{[]string{"--help"}, "help", []string{}},
		{[]string{"serve", "--help"}, "serve", []string{"--help"}},
		{[]string{"explain", "W024"}, "explain", []string{"W024"}},
	}
	for _, c := range cases {
		cmd, args := command(c.args)
		if cmd != c.wantCmd || !slices.Equal(args, c.wantArgs) {
			t.Errorf("command(%q) = %q %q, want %q %q", c.args, cmd, args, c.wantCmd, c.wantArgs)
		}
	}
}

// The build stamps version and commit with -ldflags -X, as `make build`
// does; a rename of either variable would silently leave "dev" in every
// release.
func TestVersionStampedByLdflags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "levee")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v1.2.3-test -X main.commit=0123abc", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("levee --version: %v", err)
	}
	if want := "levee v1.2.3-test (commit 0123abc, " + runtime.Version(); !strings.HasPrefix(string(out), want) {
		t.Errorf("levee --version = %q, want it to start with %q", out, want)
	}
}

// make build passes the version and the commit to the linker.
func TestMakeBuildStampsVersionAndCommit(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", "-n", "build", "VERSION=v9.9.9", "COMMIT=feedbee")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "./cmd/levee") &&
			strings.Contains(line, "-X main.version=v9.9.9") && strings.Contains(line, "-X main.commit=feedbee") {
			return
		}
	}
	t.Errorf("make -n build: no go build of ./cmd/levee with -X main.version and -X main.commit:\n%s", out)
}
