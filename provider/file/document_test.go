package file

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// loadOne writes body to a file named name in a temp dir and loads the dir.
func loadOne(t *testing.T, name, body string) Loaded {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(Options{Dirs: []string{dir}})
}

// codes lists the warnings and errors by code and key (infos, such as
// I002 for a backend without a port, are the validator's business).
func codes(ds []diagnostics.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		if d.Severity == diagnostics.Info {
			continue
		}
		out = append(out, string(d.Code)+" "+d.Key)
	}
	slices.Sort(out)
	return out
}

func ids(l Loaded) []string {
	var out []string
	for _, e := range l.Entries {
		out = append(out, e.Entrypoint.ID)
	}
	return out
}

// Every accepted shape, in both formats, gives the same entrypoints and
// the API's diagnostics (code and JSON path); a file's problems are W037
// with the line (YAML) or line and column (JSON) of the mistake.
func TestDecodeShapesAndPositions(t *testing.T) {
	for _, tc := range []struct {
		name, file, body string
		ids              []string
		codes            []string
	}{
		{name: "documented shape", file: "a.yaml", body: `
entrypoints:
  - name: nas
    config: {hostnames: [nas.example.com]}
    backends: [{address: 192.168.1.20, port: 5000}]
  - name: vm
    config: {hostnames: [vm.example.com], circuit_breaker: {threshold: 7}}
    backends: [{address: 10.0.0.7}]
`, ids: []string{"nas@file", "vm@file"}, codes: []string{"W024 config.circuit_breaker.threshold"}},
		{name: "one entrypoint", file: "a.yml", body: "name: nas\nconfig:\n  hostnames: [nas.example.com]\nbackends: [{address: 10.0.0.1}]\n",
			ids: []string{"nas@file"}},
		{name: "a bare list", file: "a.json", body: `[{"name":"a","config":{"hostnames":["a.test"]},"backends":[{"address":"10.0.0.1"}]},
 {"name":"b","config":{"hostnames":["b.test"]},"backends":[{"address":"10.0.0.2"}]}]`, ids: []string{"a@file", "b@file"}},
		{name: "JSON documented shape, keys in any case", file: "a.json",
			body: `{"Entrypoints":[{"Name":"a","config":{"hostnames":["a.test"],"retry":{"atempts":2}},"backends":[{"address":"10.0.0.1"}]}]}`,
			ids:  []string{"a@file"}, codes: []string{"W013 config.retry.atempts"}},
		{name: "several YAML documents", file: "a.yaml", body: "name: a\nconfig: {hostnames: [a.test]}\nbackends: [{address: 10.0.0.1}]\n---\n# nothing\n---\nentrypoints:\n- name: b\n  config: {hostnames: [b.test]}\n  backends: [{address: 10.0.0.2}]\n",
			ids: []string{"a@file", "b@file"}},
		{name: "empty file", file: "a.yaml", body: "# routes come later\n"},
		{name: "unknown top-level key", file: "a.yaml", body: "entrypoint:\n  - name: a\n",
			codes: []string{"W013 entrypoint", "W037 line 1"}},
		{name: "YAML syntax error", file: "a.yaml", body: "entrypoints:\n  - name: a\n    config: {hostnames: [a.test]\n  - name: b\n",
			codes: []string{"W037 line 3"}},
		{name: "YAML tab indentation", file: "a.yaml", body: "entrypoints:\n\t- name: a\n",
			codes: []string{"W037 line 2"}},
		{name: "JSON syntax error", file: "a.json", body: "{\"entrypoints\": [\n  {\"name\": \"a\",}\n]}\n",
			codes: []string{"W037 line 2, column 16"}},
		{name: "JSON cut short", file: "a.json", body: "{\"entrypoints\": [\n  {\"name\": \"a\"",
			codes: []string{"W037 line 2, column 14"}},
		{name: "entrypoints not a list", file: "a.yaml", body: "entrypoints: {name: a}\n", codes: []string{"W037 line 1"}},
		{name: "a scalar", file: "a.yaml", body: "just words\n", codes: []string{"W037 line 1"}},
		{name: "refused entrypoint beside a good one", file: "a.yaml", body: `
entrypoints:
  - name: good
    config: {hostnames: [good.test]}
    backends: [{address: 10.0.0.1}]
  - name: Bad Name
    config: {hostnames: [bad.test]}
  - name: nohost
    config: {hostnames: ["https://x/"]}
`, ids: []string{"good@file"}, codes: []string{"E002 config.hostnames", "W032 config.hostnames", "W034 backends", "W038 ", "W038 "}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := loadOne(t, tc.file, tc.body)
			if got := ids(l); !slices.Equal(got, tc.ids) {
				t.Errorf("ids = %v, want %v", got, tc.ids)
			}
			if got := codes(l.Diagnostics); !slices.Equal(got, tc.codes) {
				t.Errorf("diagnostics = %v, want %v\n%v", got, tc.codes, l.Diagnostics)
			}
			for _, e := range l.Entries {
				if e.Entrypoint.Source != config.SourceFile || !strings.HasSuffix(e.File, tc.file) {
					t.Errorf("%s: source %q file %q", e.Entrypoint.ID, e.Entrypoint.Source, e.File)
				}
			}
			for _, d := range l.Diagnostics {
				if d.Source.Provider != config.SourceFile || !strings.HasSuffix(d.Source.ObjectName, tc.file) {
					t.Errorf("diagnostic %v: want provider file and the file as object", d)
				}
			}
		})
	}
}

// A field mistake in a file gets what the API gives the same payload:
// code, JSON path, fallback and message.
func TestSameDiagnosticsAsTheAPI(t *testing.T) {
	payload := `{"name":"app","config":{"hostnames":["app.test"],"circuit_breaker":{"threshold":7},"timeout":"soon"},"backends":[{"address":"10.0.0.1","port":99999}]}`
	_, want, err := config.DecodeEntrypoint(config.FormatJSON, []byte(payload), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	l := loadOne(t, "app.json", payload)
	if len(l.Diagnostics) != len(want) || len(want) < 3 {
		t.Fatalf("file gives %v, API %v", l.Diagnostics, want)
	}
	for i, d := range l.Diagnostics {
		w := want[i]
		if d.Code != w.Code || d.Key != w.Key || d.Value != w.Value || d.Fallback != w.Fallback || d.Message != w.Message {
			t.Errorf("file %v, API %v", d, w)
		}
		if d.Source.ObjectID != "app@file" || d.Source.Service != "app" {
			t.Errorf("source %+v, want the entrypoint app@file as the file's service", d.Source)
		}
	}
	ep := l.Entries[0].Entrypoint
	if ep.Backends[0].Port != config.DefaultPort || ep.Name != "app" {
		t.Errorf("entrypoint %+v: the bad port should fall back", ep)
	}
}

// Two files with one name: the older keeps it, the other gets W038; an
// explicit created decides, else the first by path.
func TestNameCollisionAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, created string) {
		body := "name: web\nconfig: {hostnames: [" + name + ".test]}\nbackends: [{address: 10.0.0.1}]\n"
		if created != "" {
			body += "created: " + created + "\n"
		}
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", "")
	write("b", "")
	l := Load(Options{Dirs: []string{dir}})
	if len(l.Entries) != 1 || l.Entries[0].Entrypoint.Hosts[0] != "a.test" || !slices.Equal(codes(l.Diagnostics), []string{"W038 name"}) {
		t.Fatalf("same age: %v %v, want a.yaml's and W038", l.Entries, l.Diagnostics)
	}
	for _, d := range l.Diagnostics {
		if d.Code == diagnostics.ConfigEntrypointRefused && !strings.HasSuffix(d.Source.ObjectName, "b.yaml") {
			t.Errorf("W038 on %s, want b.yaml", d.Source.ObjectName)
		}
	}
	write("b", "2020-01-01T00:00:00Z")
	l = Load(Options{Dirs: []string{dir}})
	if len(l.Entries) != 1 || l.Entries[0].Entrypoint.Hosts[0] != "b.test" || !l.Entries[0].Entrypoint.Created.Equal(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("b older: %v", l.Entries)
	}
}

// What is not a config file is not read: hidden names (a ConfigMap's
// ..data), other extensions, directories; symlinks to files are.
func TestDirectoryListing(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "..2026_01_01")
	if err := os.Mkdir(data, 0o755); err != nil {
		t.Fatal(err)
	}
	good := "name: cm\nconfig: {hostnames: [cm.test]}\nbackends: [{address: 10.0.0.1}]\n"
	for path, body := range map[string]string{
		filepath.Join(data, "routes.yaml"): good,
		filepath.Join(dir, "notes.txt"):    "not: config",
		filepath.Join(dir, ".swp.yaml"):    "{{{",
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("..2026_01_01", filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..data", "routes.yaml"), filepath.Join(dir, "routes.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.yaml"), 0o755); err != nil {
		t.Fatal(err)
	}
	l := Load(Options{Dirs: []string{dir}})
	if !slices.Equal(ids(l), []string{"cm@file"}) || len(codes(l.Diagnostics)) != 0 {
		t.Fatalf("ConfigMap layout: %v %v", ids(l), l.Diagnostics)
	}
	if l.Entries[0].File != filepath.Join(dir, "routes.yaml") {
		t.Errorf("file %q, want the key's name in the directory", l.Entries[0].File)
	}
}

// A file over the limit is W026; a named file with any extension is read
// (JSON sniffed), and a missing one is W026.
func TestLimitsAndNamedFiles(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", 200)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "levee.conf")
	if err := os.WriteFile(conf, []byte(`{"name":"c","config":{"hostnames":["c.test"]},"backends":[{"address":"10.0.0.1"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	l := Load(Options{Dirs: []string{dir}, Files: []string{conf, filepath.Join(dir, "missing.yaml")}, MaxFileBytes: 100})
	if !slices.Equal(ids(l), []string{"c@file"}) || !slices.Equal(codes(l.Diagnostics), []string{"W026 ", "W026 "}) {
		t.Fatalf("%v %v", ids(l), l.Diagnostics)
	}
	for _, d := range l.Diagnostics {
		if d.Code != diagnostics.ConfigFileUnread {
			continue
		}
		if !strings.Contains(d.Message, "over the limit of 100 bytes") && !strings.Contains(d.Message, "no such file") {
			t.Errorf("message %q", d.Message)
		}
	}
}

func TestLineColumn(t *testing.T) {
	data := []byte("ab\ncd\n\nef")
	// The offset counts the bytes read, the offending one included.
	for _, tc := range []struct{ off, line, col int }{{0, 1, 1}, {1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {4, 2, 1}, {5, 2, 2}, {7, 3, 1}, {8, 4, 1}, {9, 4, 2}, {99, 4, 2}} {
		if l, c := lineColumn(data, tc.off); l != tc.line || c != tc.col {
			t.Errorf("offset %d: %d:%d, want %d:%d", tc.off, l, c, tc.line, tc.col)
		}
	}
}
