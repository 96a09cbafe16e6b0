// Command levee is a label-driven, Docker-aware HTTP edge proxy with circuit
// breakers on every route.
//
// Usage:
//
//	levee [serve] [flags]        run the proxy (default)
//	levee validate [FILE...]     check labels in compose files (or the live engine)
//	levee explain CODE           explain a diagnostic code, e.g. W024
//	levee health [URL]           probe a running Levee's /health (for HEALTHCHECK)
//	levee version                print the version
//
// Every serve flag can also be set with a LEVEE_* environment variable
// (--http-listen → LEVEE_HTTP_LISTEN); see docs/operations.md.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// version is stamped at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the process exit code: 0 on
// success, 1 on failure, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return runServe(ctx, args, stdout, stderr, getenv)
	case "validate":
		return runValidate(ctx, args, stdout, stderr, getenv)
	case "explain":
		return runExplain(args, stdout, stderr)
	case "health":
		return runHealth(ctx, args, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "levee %s\n", version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "levee: unknown command %q\n\n%s", cmd, usage)
	return 2
}

const usage = `Usage:
  levee [serve] [flags]        run the proxy (default; see levee serve -h)
  levee validate [FILE...]     check labels in compose files, or the live engine
  levee explain CODE           explain a diagnostic code, e.g. W024
  levee health [URL]           probe a running Levee (default http://127.0.0.1:3035/health)
  levee version                print the version
`
