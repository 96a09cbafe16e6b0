package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// mdLink is a markdown link to a local page, with or without a fragment:
// [text](page.md#anchor), [text](#anchor), [text](../docs/page.md).
var mdLink = regexp.MustCompile(`\]\(([^()\s#]*\.md)?(#[^()\s]*)?\)`)

// Every link from the README, the project files and docs/ to a markdown
// page of the repository names a page that exists and, when it has a
// fragment, a heading of that page, so that moving or renaming a section
// (docs/performance.md's "Today" sections, its history) cannot leave a
// dangling link behind.
func TestDocLinksResolve(t *testing.T) {
	pages := append(markdownFiles(t), "../../CONTRIBUTING.md", "../../SECURITY.md", "../../bench/README.md")
	anchors := map[string]map[string]bool{}
	for _, page := range pages {
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCode(string(doc)), -1) {
			target, fragment := m[1], strings.TrimPrefix(m[2], "#")
			if target == "" && fragment == "" {
				continue
			}
			path := page
			if target != "" {
				path = filepath.Join(filepath.Dir(page), target)
			}
			headings, ok := anchors[path]
			if !ok {
				headings, ok = headingAnchors(path)
				if !ok {
					t.Errorf("%s links to %s, which does not exist", page, target)
					continue
				}
				anchors[path] = headings
			}
			if fragment != "" && !headings[fragment] {
				t.Errorf("%s links to %s#%s: %s has no such heading", page, target, fragment, path)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of a
// markdown page: lower case, punctuation other than '-' and '_' dropped,
// spaces as '-', and "-1", "-2"... after repeats.
func headingAnchors(path string) (map[string]bool, bool) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(withoutCode(string(doc)), "\n") {
		text, ok := headingText(line)
		if !ok {
			continue
		}
		anchor := slug(text)
		if n := seen[anchor]; n > 0 {
			anchors[anchor+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[anchor] = true
		}
		seen[anchor]++
	}
	return anchors, true
}

var linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// headingText is the text of an ATX heading line, links reduced to their
// text and code spans to their content.
func headingText(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
		return "", false
	}
	text := linkText.ReplaceAllString(line[level+1:], "$1")
	return strings.ReplaceAll(text, "`", ""), true
}

// slug keeps what GitHub keeps of a heading (letters, digits, marks, '-'
// and '_'; symbols such as ×, → and ≤ go) and turns spaces into '-'.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var fence = regexp.MustCompile("(?ms)^```.*?^```")

// withoutCode blanks fenced code blocks, whose '#' lines are shell
// comments and whose brackets are not links.
func withoutCode(doc string) string {
	return fence.ReplaceAllStringFunc(doc, func(block string) string {
		return strings.Repeat("\n", strings.Count(block, "\n"))
	})
}
