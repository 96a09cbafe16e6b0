package conformance

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// leveeBinary is built once per test process by TestMain.
var leveeBinary string

// defaultParallel replaces -test.parallel's default (GOMAXPROCS) unless the
// flag is given: the vectors spend their time waiting on sockets and
// timers, not on the CPU, and the four combinations run side by side.
const defaultParallel = "16"

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", defaultParallel)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "levee-conformance-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	leveeBinary = filepath.Join(dir, "levee")
	build := exec.Command("go", "build", "-o", leveeBinary, "./cmd/levee")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance: building levee:", err)
		return 1
	}
	return m.Run()
}

// moduleRoot is the directory of the go.mod above the test's directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}
