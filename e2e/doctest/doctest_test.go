// Package doctest runs the shell examples of README.md,
// docs/getting-started.md and docs/api.md, in order as written, against a
// real levee binary (--docker=false, loopback listeners, a temp state
// file), so the documentation cannot drift from what Levee does.
//
// Every ```sh block runs unless the line before its fence is
//
//	<!-- doctest: docker (why) -->   it needs a Docker Engine (the compose demo)
//	<!-- doctest: skip (why) -->     it cannot run here (it never ends, say)
//
// The blocks of one file run one after the other, each in its own
// `bash -euo pipefail`, with the shell variables the earlier blocks set
// carried over. docs/api.md's run in a temp directory holding the .env
// that `make demo` would write (LEVEE_API_TOKEN); the others in the
// repository root. The docs' fixed addresses (127.0.0.1:3035 for the API,
// 127.0.0.1:8080 for the proxy) are replaced by the test instance's, and
// `go run ./cmd/levee` by the binary built here (the same main package).
//
// A block must exit 0, and every curl in it must answer the status of the
// `# 201`-style comment that follows it (on its line or below, before the
// next curl), or 2xx when there is none. curl always runs with --max-time.
package doctest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/leveetest"
)

// docs are the files whose examples run, in this order.
var docs = []string{"README.md", "docs/getting-started.md", "docs/api.md"}

// block is one ```sh block of a document.
type block struct {
	file string
	line int    // of the opening fence, 1-based
	text string // the commands
	mark string // "", "docker" or "skip"
	why  string // the marker's reason
}

var (
	marker     = regexp.MustCompile(`^<!-- doctest: (docker|skip) \((.+)\) -->$`)
	anyMarker  = regexp.MustCompile(`<!--\s*doctest`)
	curlStart  = regexp.MustCompile(`^\s*curl\s`)
	wantStatus = regexp.MustCompile(`#\s*(\d{3})\b`)
	gotStatus  = regexp.MustCompile(`(?m)^DOCTEST-STATUS (\d{3})$`)
)

// extract returns the ```sh blocks of a markdown document.
func extract(t *testing.T, file, text string) []block {
	t.Helper()
	var out []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		fence := strings.TrimSpace(lines[i])
		if anyMarker.MatchString(fence) && !marker.MatchString(fence) {
			t.Errorf("%s:%d: malformed doctest marker %q (want <!-- doctest: docker|skip (why) -->)", file, i+1, fence)
		}
		if !strings.HasPrefix(fence, "```") {
			continue
		}
		lang := strings.TrimPrefix(fence, "```")
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, lines[i])
		}
		if lang != "sh" {
			continue
		}
		b := block{file: file, line: start + 1, text: strings.Join(body, "\n") + "\n"}
		if start > 0 {
			if m := marker.FindStringSubmatch(strings.TrimSpace(lines[start-1])); m != nil {
				b.mark, b.why = m[1], m[2]
			}
		}
		out = append(out, b)
	}
	return out
}

// expected returns the status each curl of a block must answer, in order:
// that of the first `# NNN` comment after it, or 0 for any 2xx.
func expected(text string) []int {
	var out []int
	for _, line := range strings.Split(text, "\n") {
		if curlStart.MatchString(line) {
			out = append(out, 0)
		}
		if len(out) == 0 || out[len(out)-1] != 0 {
			continue
		}
		if i := strings.Index(line, "#"); i >= 0 {
			if m := wantStatus.FindStringSubmatch(line[i:]); m != nil {
				fmt.Sscan(m[1], &out[len(out)-1])
			}
		}
	}
	return out
}

// prelude and epilogue wrap each block: they carry the shell variables
// over in $DOCTEST_STATE, bound curl and report its statuses on stderr,
// and run `go run ./cmd/levee` as the built binary.
const prelude = `__doctest_base=" $(compgen -v | tr '\n' ' ') "
if [ -s "$DOCTEST_STATE" ]; then . "$DOCTEST_STATE"; fi
curl() { command curl --max-time 10 --connect-timeout 5 -w '%{stderr}\nDOCTEST-STATUS %{http_code}\n' "$@"; }
go() { if [ "${1-}" = run ] && [ "${2-}" = ./cmd/levee ]; then shift 2; "$DOCTEST_LEVEE" "$@"; else command go "$@"; fi; }
`

const epilogue = `
for __v in $(compgen -v); do
  case "$__doctest_base" in *" $__v "*) continue ;; esac
  case "$__v" in __*|BASH*|FUNCNAME|PIPESTATUS|_) continue ;; esac
  declare -p "$__v"
done > "$DOCTEST_STATE.new"
mv "$DOCTEST_STATE.new" "$DOCTEST_STATE"
`

func TestDocExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the doc examples need %s: %v", tool, err)
			}
			t.Skipf("the doc examples need %s (%v); with CI=true this fails", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	bin, remove, err := leveetest.Build(raceEnabled)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(remove)

	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	token := base64.StdEncoding.EncodeToString(raw) // as api.md says to generate one
	p := leveetest.Start(t, bin, leveetest.Options{Args: []string{"--docker=false",
		"--api-token", token, "--state-file", filepath.Join(tmp, "state.json"), "--shutdown-timeout", "2s"}})
	api, proxy := p.APIAddr, p.ProxyAddr

	// docs/api.md's working directory: the .env make demo writes.
	apiDir := filepath.Join(tmp, "api")
	if err := os.Mkdir(apiDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(apiDir, ".env"), []byte("LEVEE_API_TOKEN="+token+"\nDOCKER_GID=0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addrs := strings.NewReplacer("127.0.0.1:3035", api, "127.0.0.1:8080", proxy)

	ran := 0
	for _, file := range docs {
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		dir := root
		if file == "docs/api.md" {
			dir = apiDir
		}
		state := filepath.Join(tmp, strings.NewReplacer("/", "_", ".", "_").Replace(file)+".vars")
		for _, b := range extract(t, file, string(text)) {
			name := fmt.Sprintf("%s:%d", b.file, b.line)
			if b.mark != "" {
				t.Logf("%s: not run (%s: %s)", name, b.mark, b.why)
				continue
			}
			ran++
			t.Run(name, func(t *testing.T) {
				runBlock(t, b, addrs.Replace(b.text), dir, state, bin)
			})
		}
	}
	if ran == 0 {
		t.Fatal("no example ran")
	}
}

// runBlock runs one block and checks its exit status and curl statuses.
func runBlock(t *testing.T, b block, script, dir, state, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", prelude+script+epilogue)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEVEE_") && !strings.HasPrefix(kv, "CURL_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "DOCTEST_STATE="+state, "DOCTEST_LEVEE="+bin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	report := func() string {
		return fmt.Sprintf("block:\n%s\nstdout:\n%s\nstderr:\n%s", b.text, stdout.String(), stderr.String())
	}
	if err != nil {
		t.Fatalf("%s:%d: %v\n%s", b.file, b.line, err, report())
	}
	var got []int
	for _, m := range gotStatus.FindAllStringSubmatch(stderr.String(), -1) {
		var n int
		fmt.Sscan(m[1], &n)
		got = append(got, n)
	}
	want := expected(b.text)
	if len(got) != len(want) {
		t.Fatalf("%s:%d: %d curl answers, the block has %d curl commands\n%s", b.file, b.line, len(got), len(want), report())
	}
	for i := range want {
		switch {
		case want[i] == 0 && (got[i] < 200 || got[i] > 299):
			t.Errorf("%s:%d: curl #%d answered %d, want 2xx (or write the status in a # comment)", b.file, b.line, i+1, got[i])
		case want[i] != 0 && got[i] != want[i]:
			t.Errorf("%s:%d: curl #%d answered %d, the docs say %d", b.file, b.line, i+1, got[i], want[i])
		}
	}
	if t.Failed() {
		t.Log(report())
	}
}
