package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shellLines returns the command lines of the ```sh blocks of a Markdown
// file, without their trailing comments.
func shellLines(t *testing.T, path string) []string {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	inBlock := false
	for _, line := range strings.Split(string(doc), "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			inBlock = true
		case strings.HasPrefix(line, "```"):
			inBlock = false
		case inBlock:
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" {
				lines = append(lines, line)
			}
		}
	}
	return lines
}

// markdownFiles is the README and every page under docs/.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"../../README.md"}, docs...)
}

// No documented command runs `go run` in the background: `kill %1` would
// stop the go tool and leave the compiled Levee running, and on a cold build
// cache the following commands run before Levee listens.
func TestDocsNeverBackgroundGoRun(t *testing.T) {
	for _, path := range markdownFiles(t) {
		for _, line := range shellLines(t, path) {
			if strings.HasPrefix(line, "go run") && strings.HasSuffix(line, "&") {
				t.Errorf("%s: %q runs go run in the background; build with go build -o bin/levee ./cmd/levee and run ./bin/levee", path, line)
			}
		}
	}
}

// The README's quick start without compose compiles Levee before starting
// it, and stops what it started.
func TestReadmeQuickStartBuildsThenRuns(t *testing.T) {
	lines := shellLines(t, "../../README.md")
	index := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Errorf("README.md has no command starting %q", prefix)
		return -1
	}
	build, start, stop := index("go build -o bin/levee ./cmd/levee"), index("./bin/levee &"), index("kill %1")
	if !(build < start && start < stop) {
		t.Errorf("README.md: want go build (line %d), then ./bin/levee & (%d), then kill %%1 (%d)", build, start, stop)
	}
}

// "The two commands" of the README are exactly two: one runs Levee, the
// other every test.
func TestReadmeTwoCommands(t *testing.T) {
	doc, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## The two commands\n")
	if !ok {
		t.Fatal(`README.md has no "## The two commands" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var cmds []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		cmds = append(cmds, strings.TrimSpace(cmd))
	}
	if len(cmds) != 2 || cmds[0] != "go run ./cmd/levee" || cmds[1] != "make test" {
		t.Errorf("README.md's two commands are %q, want go run ./cmd/levee and make test", cmds)
	}
}

// makeTargets are the targets the Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if ok && name != "" && !strings.ContainsAny(name, " \t=$#.") {
			targets[name] = true
		}
	}
	return targets
}

// Every `make TARGET` the documentation tells you to run exists.
func TestDocumentedMakeTargetsExist(t *testing.T) {
	targets := makeTargets(t)
	if !targets["test"] || !targets["demo"] {
		t.Fatalf("makeTargets found %v, which lacks test or demo", targets)
	}
	files := append(markdownFiles(t), "../../CONTRIBUTING.md")
	for _, path := range files {
		if _, err := os.Stat(path); err != nil {
			continue // CONTRIBUTING.md is optional here; its own test requires it
		}
		for _, line := range shellLines(t, path) {
			fields := strings.Fields(line)
			for i := 0; i+1 < len(fields); i++ {
				if fields[i] == "make" && !strings.HasPrefix(fields[i+1], "-") && !strings.Contains(fields[i+1], "=") {
					if target := fields[i+1]; !targets[target] {
						t.Errorf("%s: %q runs make %s, which the Makefile does not define", path, line, target)
					}
				}
			}
		}
	}
}

// The demo is torn down with make demo-down: compose down with its volume,
// so that the next make demo starts from a fresh state volume.
func TestMakeDemoDownRemovesTheVolume(t *testing.T) {
	out, err := makeAt(t, "-n", "demo-down", "COMPOSE=docker-compose")
	if err != nil || strings.TrimSpace(out) != "docker-compose down -v" {
		t.Errorf("make -n demo-down = %q, %v; want docker-compose down -v", out, err)
	}
}

// Where the documentation spells out compose commands, it says once that
// Compose v1 (docker-compose) and the plugin (docker compose) both do.
func TestDocsNameBothComposeSpellings(t *testing.T) {
	for _, path := range []string{"../../README.md", "../../docs/getting-started.md", "../../docs/operations.md"} {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(strings.Join(strings.Fields(string(doc)), " "), "docker-compose.yml", "")
		for _, spelling := range []string{"docker-compose", "docker compose"} {
			if !strings.Contains(text, spelling) {
				t.Errorf("%s does not mention %s", path, spelling)
			}
		}
	}
}
