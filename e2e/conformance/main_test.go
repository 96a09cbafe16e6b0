package conformance

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/levee-proxy/levee/e2e/leveetest"
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
	bin, remove, err := leveetest.Build(false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		return 1
	}
	defer remove()
	leveeBinary = bin
	return m.Run()
}
