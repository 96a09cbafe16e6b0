package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fuzzTargets maps every fuzz target in the repository to its package
// directory, relative to the root ("router/httpx/server").
func fuzzTargets(t *testing.T, root string) map[string]string {
	t.Helper()
	fuzzFunc := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	targets := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range fuzzFunc.FindAllStringSubmatch(string(src), -1) {
			targets[m[1]] = filepath.ToSlash(dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return targets
}

// CONTRIBUTING.md gives the command that fuzzes each target of the
// repository for a bounded time, in the right package.
func TestContributingListsEveryFuzzer(t *testing.T) {
	doc, err := os.ReadFile("../../CONTRIBUTING.md")
	if err != nil {
		t.Fatal(err)
	}
	targets := fuzzTargets(t, "../..")
	if len(targets) == 0 {
		t.Fatal("found no fuzz targets in the repository")
	}
	for name, dir := range targets {
		want := "go test -run='^$' -fuzz='^" + name + "$' -fuzztime="
		found := false
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.Contains(line, want) && strings.Contains(line, " ./"+dir+"/`") {
				found = true
			}
		}
		if !found {
			t.Errorf("CONTRIBUTING.md has no line with `%s… ./%s/`", want, dir)
		}
	}
}

// The project files a user or a packager looks for are there: the licence
// in full, the security policy, the changelog with its Unreleased section.
func TestProjectFiles(t *testing.T) {
	for path, wants := range map[string][]string{
		"../../LICENSE":      {"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS"},
		"../../SECURITY.md":  {"## Reporting a vulnerability", "## Supported versions", "latest release"},
		"../../CHANGELOG.md": {"keepachangelog.com", "## [Unreleased]"},
	} {
		doc, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(string(doc), want) {
				t.Errorf("%s does not contain %q", path, want)
			}
		}
	}
}
