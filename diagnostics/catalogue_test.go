package diagnostics

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// codeConstants reads every Code constant declared in the package source,
// so a constant added without a catalogue entry fails the test.
func codeConstants(t *testing.T) map[string]Code {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Code{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parse %s: %v", name, err)
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for i, name := range vs.Names {
					lit := vs.Values[i].(*ast.BasicLit)
					v, _ := strconv.Unquote(lit.Value)
					out[name.Name] = Code(v)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("found no Code constants")
	}
	return out
}

func TestEveryCodeHasACompleteEntry(t *testing.T) {
	consts := codeConstants(t)
	seen := map[Code]string{}
	for name, code := range consts {
		if other, dup := seen[code]; dup {
			t.Errorf("%s and %s share code %s", name, other, code)
		}
		seen[code] = name
		e, ok := Lookup(code)
		if !ok {
			t.Errorf("%s (%s) has no catalogue entry", name, code)
			continue
		}
		if e.Title == "" || e.Effect == "" || e.Fix == "" || e.Example == "" {
			t.Errorf("%s (%s): incomplete entry %+v", name, code, e)
		}
	}
	if len(Catalogue()) != len(consts) {
		t.Errorf("catalogue has %d entries for %d constants", len(Catalogue()), len(consts))
	}
}

// The letter of a code is its severity, and numbers are three digits.
func TestCodeNumbering(t *testing.T) {
	re := regexp.MustCompile(`^[EWI][0-9]{3}$`)
	letter := map[Severity]byte{Error: 'E', Warn: 'W', Info: 'I'}
	for _, e := range Catalogue() {
		if !re.MatchString(string(e.Code)) {
			t.Errorf("code %q is not E/W/I + 3 digits", e.Code)
			continue
		}
		if e.Code[0] != letter[e.Severity] {
			t.Errorf("%s has severity %s", e.Code, e.Severity)
		}
	}
}

func TestCatalogueIsSortedCopy(t *testing.T) {
	c := Catalogue()
	for i := 1; i < len(c); i++ {
		if c[i-1].Code >= c[i].Code {
			t.Fatalf("not sorted at %s, %s", c[i-1].Code, c[i].Code)
		}
	}
	c[0].Title = "changed"
	if e, _ := Lookup(c[0].Code); e.Title == "changed" {
		t.Error("Catalogue returned the shared slice")
	}
	if _, ok := Lookup("W999"); ok {
		t.Error("Lookup found an unknown code")
	}
}

func TestDidYouMean(t *testing.T) {
	cands := []string{"circuitBreaker.threshold", "circuitBreaker.minRequests", "host", "port", "path"}
	cases := map[string]string{
		"circuitbreaker.threshold": "did you mean circuitBreaker.threshold?",
		"circuitBreaker.treshold":  "did you mean circuitBreaker.threshold?",
		"hots":                     "did you mean host?",
		"completelyDifferent":      "",
		"prot":                     "did you mean port?",
	}
	for in, want := range cases {
		if got := DidYouMean(in, cands); got != want {
			t.Errorf("DidYouMean(%q) = %q, want %q", in, got, want)
		}
	}
}

// New takes the severity from the catalogue, whatever the producer.
func TestNewUsesTheCatalogueSeverity(t *testing.T) {
	for _, e := range Catalogue() {
		d := New(e.Code, Source{Provider: "test"}, "k", "v", "f", "m", "h")
		if d.Severity != e.Severity || d.Key != "k" || d.Value != "v" || d.Fallback != "f" || d.Message != "m" || d.Hint != "h" {
			t.Errorf("%s: %+v, want severity %s and the fields given", e.Code, d, e.Severity)
		}
	}
}

// The fallback is named once: after a message that does not say it, and
// not again after one that does.
func TestStringNamesTheFallbackOnce(t *testing.T) {
	src := Source{Provider: "docker", ObjectName: "web-1"}
	said := New(PortDefaulted, src, "levee.http.app.port", "", "8080", "no port label: using 8080, the container's only exposed port", "")
	if s := said.String(); strings.Count(s, "8080") != 1 {
		t.Errorf("%s", s)
	}
	unsaid := New(BadTimeout, src, "levee.http.app.backendTimeout", "x", "30s", "invalid backendTimeout: want a duration", "")
	if s := unsaid.String(); !strings.HasSuffix(s, "(using 30s)") {
		t.Errorf("%s", s)
	}
}
