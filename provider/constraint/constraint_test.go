package constraint

import (
	"errors"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	shop := map[string]string{"com.docker.compose.project": "shop", "tier": "web-front"}
	blog := map[string]string{"com.docker.compose.project": "blog", "tier": "db"}
	none := map[string]string{}
	cases := []struct {
		expr             string
		shop, blog, none bool
	}{
		{`Label("com.docker.compose.project","shop")`, true, false, false},
		{"Label(`com.docker.compose.project`, `shop`)", true, false, false},
		{`!Label("com.docker.compose.project","shop")`, false, true, true},
		{`Label("com.docker.compose.project","shop") || Label("com.docker.compose.project","blog")`, true, true, false},
		{`Label("com.docker.compose.project","shop") && Label("tier","db")`, false, false, false},
		{`LabelRegex("tier","front")`, true, false, false}, // found anywhere, as in Traefik
		{`LabelRegex("tier","^front$")`, false, false, false},
		{`LabelRegex("tier","^(web-front|db)$")`, true, true, false},
		{`LabelRegex("tier",".*")`, true, true, false}, // the label must be there
		// && binds tighter than ||, ! tighter than both.
		{`Label("tier","db") || Label("tier","web-front") && Label("com.docker.compose.project","blog")`, false, true, false},
		{`(Label("tier","db") || Label("tier","web-front")) && Label("com.docker.compose.project","blog")`, false, true, false},
		{`!Label("tier","db") && !Label("tier","web-front")`, false, false, true},
		{`!(Label("tier","db") || Label("tier","web-front"))`, false, false, true},
		{`!!Label("tier","db")`, false, true, false},
		{`Label("com.docker.compose.project","sh\x6fp")`, true, false, false},
		{`Label("Tier","db")`, false, false, false}, // keys compare exactly
	}
	for _, tc := range cases {
		e, err := Parse(tc.expr)
		if err != nil {
			t.Fatalf("Parse(%s): %v", tc.expr, err)
		}
		if got := [3]bool{e.Match(shop), e.Match(blog), e.Match(none)}; got != [3]bool{tc.shop, tc.blog, tc.none} {
			t.Errorf("%s: shop, blog, none = %v, want %v", tc.expr, got, [3]bool{tc.shop, tc.blog, tc.none})
		}
		if e.String() != tc.expr {
			t.Errorf("String() = %q, want the input", e.String())
		}
	}
	var nilExpr *Expr
	if !nilExpr.Match(blog) || nilExpr.String() != "" {
		t.Error("a nil constraint must match everything")
	}
}

// A parse error names the position (from 1) where the expression stops
// making sense, and what was wanted there.
func TestParseErrorsNameThePosition(t *testing.T) {
	cases := []struct {
		expr string
		pos  int
		says string
	}{
		{``, 1, "empty expression"},
		{`   `, 4, "empty expression"},
		{`Label("a","b"`, 14, "want )"},
		{`Label("a")`, 10, ", between key and value"},
		{`Label(a,"b")`, 7, "the label key as a quoted string"},
		{`Label("a","b") Label("c","d")`, 16, "want && or ||"},
		{`Label("a","b") &`, 16, "write && or ||"},
		{`label("a","b")`, 1, "case-sensitive"},
		{`Host("a","b")`, 1, `unknown function "Host"`},
		{`Labl("a","b")`, 1, "did you mean Label?"},
		{`(Label("a","b")`, 16, "close the ( at position 1"},
		{`Label("a","b) `, 11, "never closed"},
		{`Label("a","\q")`, 11, "bad escape"},
		{`LabelRegex("a","(")`, 1, "bad regular expression"},
		{`Label("a","b") ||`, 18, "got the end of the expression"},
		{`!`, 2, "got the end"},
		{`Label("a","b") # x`, 16, "character '#'"},
		{strings.Repeat("!", 200) + `Label("a","b")`, 101, "nested more than 100"},
	}
	for _, tc := range cases {
		_, err := Parse(tc.expr)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q) = %v, want a *SyntaxError", tc.expr, err)
			continue
		}
		if se.Pos != tc.pos || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "position") {
			t.Errorf("Parse(%q): %v (position %d); want position %d, saying %q", tc.expr, err, se.Pos, tc.pos, tc.says)
		}
	}
}

// Any input either parses, or fails with a position inside it (or just
// past its end); a parsed expression evaluates without panicking and
// keeps its source.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`Label("a","b")`, `!(Label("a","b") || LabelRegex("c","^d$")) && Label("e","f")`, "Label(`a`,`b`)", `((`, `"`, `Label("\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Pos < 1 || se.Pos > len(s)+1 {
				t.Fatalf("Parse(%q): %v: want a *SyntaxError with a position in 1..%d", s, err, len(s)+1)
			}
			return
		}
		if e.String() != s {
			t.Fatalf("String() = %q, want %q", e.String(), s)
		}
		e.Match(map[string]string{"a": "b", "c": "d"})
		e.Match(nil)
	})
}
