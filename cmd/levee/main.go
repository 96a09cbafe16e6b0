// Command levee is a label-driven, Docker-aware HTTP edge proxy with circuit
// breakers on every route.
//
// Usage:
//
//	levee [serve] [flags]        run the proxy (default)
//	levee validate [FILE...]     check labels in compose files (or the live engine)
//	levee explain CODE           explain a diagnostic code, e.g. W024
//	levee health [URL]           probe a running Levee's /health (for HEALTHCHECK)
//	levee import-acme FILE       copy Traefik's acme.json certificates into --cert-dir
//	levee version                print the version, commit and Go version (also --version, -v)
//	levee help                   list the commands (also --help, -h)
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
	"runtime"
	"strings"
	"syscall"
)

// version and commit are stamped by the build (`make build`, `make release`)
// with -ldflags "-X main.version=… -X main.commit=…". They are the only
// package variables: -X can set nothing else.
var (
	version = "dev"
	commit  = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the process exit code: 0 on
// success, 1 on failure, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd, args := command(args)
	switch cmd {
	case "serve":
		return runServe(ctx, args, stdout, stderr, getenv)
	case "validate":
		return runValidate(ctx, liveEngine(), args, os.Stdin, stdout, stderr, getenv)
	case "explain":
		return runExplain(args, stdout, stderr)
	case "health":
		return runHealth(ctx, args, stdout, stderr)
	case "import-acme":
		return runImportACME(ctx, args, stdout, stderr, getenv)
	case "version":
		if len(args) > 0 {
			fmt.Fprintf(stderr, "levee version: unexpected argument %q (version takes none)\n", args[0])
			return 2
		}
		fmt.Fprintln(stdout, versionLine())
		return 0
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "levee: unknown command %q\n\n%s", cmd, usage)
	return 2
}

// command splits args into the subcommand and its arguments. The first
// argument names the command unless it is a flag: then the command is serve
// (`levee --http-listen :80` is `levee serve --http-listen :80`), except for
// the top-level help and version flags, which would otherwise reach serve's
// flag set and either show only the serve flags or be refused.
func command(args []string) (string, []string) {
	if len(args) == 0 {
		return "serve", nil
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return "help", args[1:]
	case "-v", "-version", "--version":
		return "version", args[1:]
	}
	if len(args[0]) > 0 && args[0][0] == '-' {
		return "serve", args
	}
	return args[0], args[1:]
}

// versionLine is what `levee version` prints: the release, the commit it was
// built from and the Go toolchain, which together identify a binary.
func versionLine() string {
	return formatVersion(version, commit)
}

// formatVersion names the commit once: a version from git describe
// already holds it (0123abc, v1.2.0-3-g0123abc, 0123abc-dirty), and is
// then not followed by "commit 0123abc" again.
func formatVersion(version, commit string) string {
	if commit != "" && commit != "unknown" && strings.Contains(version, commit) {
		return fmt.Sprintf("levee %s (%s, %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	return fmt.Sprintf("levee %s (commit %s, %s, %s/%s)", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// usage lists every command, one line each. The serve flags are many and
// have their own help (levee serve --help), generated from the flag set.
const usage = `Levee: a Docker-aware HTTP edge proxy with circuit breakers.

Usage:
  levee [serve] [flags]        run the proxy (the default command)
  levee validate [FILE...]     check labels in compose files, or the live engine
  levee explain CODE           explain a diagnostic code, e.g. W024
  levee health [URL]           probe a running Levee (default http://127.0.0.1:3035/health)
  levee import-acme FILE       copy the certificates of Traefik's acme.json into --cert-dir
  levee version                print the version, commit and Go version (also --version, -v)
  levee help                   print this list (also --help, -h)

levee serve --help shows the serve flags; each is also a LEVEE_* environment
variable (--http-listen is LEVEE_HTTP_LISTEN). See docs/operations.md.
`
