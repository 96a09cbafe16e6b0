package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
)

// noEngine fails every read of the engine: validate --config-dir must not
// need one.
func noEngine() engineReader {
	fail := func(context.Context, docker.HostSpec) ([]labels.Container, error) {
		return nil, errors.New("engine read")
	}
	return engineReader{listContainers: fail, listServices: fail}
}

func writeConfig(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// validate --config-dir reads the config files as serve does, without the
// engine: a good file is routed, a field mistake is degraded with the
// API's code and path, and the exit status is 0 (1 with --strict).
func TestValidateConfigDir(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "nas.yaml", `entrypoints:
  - name: nas
    config: {hostnames: [nas.example.com]}
    backends: [{address: 192.168.1.20, port: 5000}]
  - name: vm
    config: {hostnames: [vm.example.com], circuit_breaker: {threshold: 7}}
    backends: [{address: 10.0.0.7, port: 80}]
`)
	out, errOut, code := validateWith(t, noEngine(), nil, "--config-dir", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{
		"routed    " + filepath.Join(dir, "nas.yaml") + "  nas  nas.example.com -> 192.168.1.20:5000 [file]",
		"degraded  " + filepath.Join(dir, "nas.yaml") + "  vm   vm.example.com -> 10.0.0.7:80 [file]",
		"W024 warn config.circuit_breaker.threshold=\"7\"",
		"1 routed, 1 degraded",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, _, code := validateWith(t, noEngine(), nil, "--config-dir", dir, "--strict"); code != 1 {
		t.Errorf("--strict: exit %d, want 1", code)
	}
}

// A broken file is a skipped row naming the line, and exit status 1; a
// refused entrypoint is a skipped row of its own; LEVEE_CONFIG_FILE works
// as the flag; JSON output carries the rows.
func TestValidateBrokenConfigFiles(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, dir, "broken.json", "{\"entrypoints\": [\n  {\"name\": \"a\",}\n]}\n")
	writeConfig(t, dir, "refused.yaml", "entrypoints:\n  - name: good\n    config: {hostnames: [good.test]}\n    backends: [{address: 10.0.0.1, port: 80}]\n  - name: nohost\n    config: {hostnames: []}\n")
	out, _, code := validateWith(t, noEngine(), nil, "--config-dir", dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{
		"skipped   " + filepath.Join(dir, "broken.json") + "  -",
		"W037 warn line 2, column 16: malformed JSON: invalid character '}'",
		"routed    " + filepath.Join(dir, "refused.yaml") + "  good",
		"skipped   " + filepath.Join(dir, "refused.yaml") + "  nohost",
		"W038 warn: entrypoints[1] (line 5): config.hostnames must hold at least one valid host name",
		"1 routed, 0 degraded, 2 skipped",
	} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	f := filepath.Join(t.TempDir(), "one.yml")
	writeConfig(t, filepath.Dir(f), "one.yml", "name: one\nconfig: {hostnames: [one.test]}\nbackends: [{address: 10.0.0.1, port: 80}]\n")
	out, errOut, code := validateWith(t, noEngine(), map[string]string{"LEVEE_CONFIG_FILE": f}, "--format", "json")
	if code != 0 {
		t.Fatalf("LEVEE_CONFIG_FILE: exit %d %s %s", code, out, errOut)
	}
	var rep validateReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Services) != 1 || rep.Services[0].Provider != "file" || rep.Services[0].Entrypoint != "one@file" || rep.Summary["routed"] != 1 {
		t.Fatalf("report %+v", rep)
	}
}

// squash collapses runs of blanks, so that expectations do not depend on
// the report's column widths.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// validate reads error-page files as serve does: inside --error-pages-dir
// a good page is fine, a page over 1 MiB is W089; without the flag page
// files are off (W088).
func TestValidateErrorPageFiles(t *testing.T) {
	pages := t.TempDir()
	writeConfig(t, pages, "ok.html", "<p>sorry</p>")
	writeConfig(t, pages, "big.html", strings.Repeat("x", 1<<20+1))
	dir := t.TempDir()
	writeConfig(t, dir, "apps.yaml", `entrypoints:
  - name: ok
    config: {hostnames: [ok.test], errors: {status: 5xx, file: `+filepath.Join(pages, "ok.html")+`}}
    backends: [{address: 10.0.0.1, port: 80}]
  - name: big
    config: {hostnames: [big.test], errors: {status: 5xx, file: `+filepath.Join(pages, "big.html")+`}}
    backends: [{address: 10.0.0.2, port: 80}]
`)
	out, errOut, code := validateWith(t, noEngine(), nil, "--config-dir", dir, "--error-pages-dir", pages)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{"routed " + filepath.Join(dir, "apps.yaml") + " ok", "degraded " + filepath.Join(dir, "apps.yaml") + " big", "W089"} {
		if !strings.Contains(squash(out), squash(want)) {
			t.Errorf("with --error-pages-dir: output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "W088") {
		t.Errorf("with --error-pages-dir: W088 reported:\n%s", out)
	}
	out, _, _ = validateWith(t, noEngine(), nil, "--config-dir", dir)
	if n := strings.Count(out, "W088"); n != 2 {
		t.Errorf("without --error-pages-dir: %d W088, want one per page file:\n%s", n, out)
	}
}
