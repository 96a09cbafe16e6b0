package constraint

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// Expr is a parsed constraint. A nil *Expr matches every object.
type Expr struct {
	src  string
	root node
}

// node is one operator or test of the tree.
type node interface {
	match(labels map[string]string) bool
}

type (
	or    struct{ l, r node }
	and   struct{ l, r node }
	not   struct{ x node }
	label struct{ key, value string }
	regex struct {
		key string
		re  *regexp.Regexp
	}
)

func (n or) match(ls map[string]string) bool  { return n.l.match(ls) || n.r.match(ls) }
func (n and) match(ls map[string]string) bool { return n.l.match(ls) && n.r.match(ls) }
func (n not) match(ls map[string]string) bool { return !n.x.match(ls) }

func (n label) match(ls map[string]string) bool {
	v, ok := ls[n.key]
	return ok && v == n.value
}

func (n regex) match(ls map[string]string) bool {
	v, ok := ls[n.key]
	return ok && n.re.MatchString(v)
}

// Match reports whether an object with labels satisfies e; a nil e is
// satisfied by every object.
func (e *Expr) Match(labels map[string]string) bool {
	return e == nil || e.root.match(labels)
}

// String is the expression as it was given ("" for nil).
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	return e.src
}

// SyntaxError is a constraint that does not parse: Pos is the byte offset,
// from 1, where it stops making sense.
type SyntaxError struct {
	Input string
	Pos   int
	Msg   string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("constraint %q: at position %d: %s", e.Input, e.Pos, e.Msg)
}

// Parse parses a constraint expression (see the package documentation).
func Parse(src string) (*Expr, error) {
	p := &parser{src: src}
	p.next()
	if p.tok.kind == tokEOF {
		return nil, p.fail(p.tok.pos, "empty expression: want Label(\"key\",\"value\"), LabelRegex(\"key\",\"re\"), !, && or ||")
	}
	root, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		msg := "unexpected " + p.tok.describe()
		if p.tok.kind != tokBad {
			msg += ": want && or || between tests"
		}
		return nil, p.fail(p.tok.pos, msg)
	}
	return &Expr{src: src, root: root}, nil
}

// maxDepth bounds nesting, so that a hostile expression cannot exhaust the
// stack.
const maxDepth = 100

type parser struct {
	src   string
	off   int // where the next token starts
	tok   token
	depth int
}

func (p *parser) fail(pos int, msg string) error {
	return &SyntaxError{Input: p.src, Pos: pos + 1, Msg: msg}
}

func (p *parser) or() (node, error) {
	l, err := p.and()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tokOr {
		p.next()
		r, err := p.and()
		if err != nil {
			return nil, err
		}
		l = or{l, r}
	}
	return l, nil
}

func (p *parser) and() (node, error) {
	l, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tokAnd {
		p.next()
		r, err := p.unary()
		if err != nil {
			return nil, err
		}
		l = and{l, r}
	}
	return l, nil
}

func (p *parser) unary() (node, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, p.fail(p.tok.pos, fmt.Sprintf("nested more than %d deep", maxDepth))
	}
	defer func() { p.depth-- }()
	switch p.tok.kind {
	case tokNot:
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return not{x}, nil
	case tokLParen:
		open := p.tok.pos
		p.next()
		x, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, p.fail(p.tok.pos, fmt.Sprintf("want ) to close the ( at position %d, got %s", open+1, p.tok.describe()))
		}
		p.next()
		return x, nil
	case tokIdent:
		return p.call()
	}
	return nil, p.fail(p.tok.pos, "want Label(...), LabelRegex(...), ! or (, got "+p.tok.describe())
}

// call parses Label("k","v") or LabelRegex("k","re").
func (p *parser) call() (node, error) {
	name, at := p.tok.text, p.tok.pos
	if name != "Label" && name != "LabelRegex" {
		hint := ""
		if strings.EqualFold(name, "Label") || strings.EqualFold(name, "LabelRegex") {
			hint = " (names are case-sensitive)"
		} else if dym := diagnostics.DidYouMean(name, []string{"Label", "LabelRegex"}); dym != "" {
			hint = "; " + dym
		}
		return nil, p.fail(at, fmt.Sprintf("unknown function %q: want Label or LabelRegex%s", name, hint))
	}
	p.next()
	args := make([]string, 0, 2)
	for i, want := range []tokKind{tokLParen, tokString, tokComma, tokString, tokRParen} {
		if p.tok.kind != want {
			return nil, p.fail(p.tok.pos, fmt.Sprintf("%s: want %s, got %s", name, want.describe(i), p.tok.describe()))
		}
		if want == tokString {
			args = append(args, p.tok.text)
		}
		p.next()
	}
	if name == "Label" {
		return label{key: args[0], value: args[1]}, nil
	}
	re, err := regexp.Compile(args[1])
	if err != nil {
		return nil, p.fail(at, fmt.Sprintf("LabelRegex: bad regular expression %q: %v", args[1], err))
	}
	return regex{key: args[0], re: re}, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokBad
	tokIdent
	tokString
	tokLParen
	tokRParen
	tokComma
	tokNot
	tokAnd
	tokOr
)

// describe names what a call wants at its i-th token.
func (k tokKind) describe(i int) string {
	switch k {
	case tokLParen:
		return "("
	case tokRParen:
		return ")"
	case tokComma:
		return ", between key and value"
	}
	if i == 1 {
		return "the label key as a quoted string"
	}
	return "the value as a quoted string"
}

type token struct {
	kind tokKind
	pos  int    // byte offset, from 0
	text string // an identifier's name, a string's value, or the bad input
}

func (t token) describe() string {
	switch t.kind {
	case tokEOF:
		return "the end of the expression"
	case tokIdent:
		return fmt.Sprintf("%q", t.text)
	case tokString:
		return fmt.Sprintf("string %q", t.text)
	case tokBad:
		return t.text
	}
	return fmt.Sprintf("%q", t.text)
}

// next reads the token at p.off into p.tok.
func (p *parser) next() {
	s := p.src
	for p.off < len(s) && (s[p.off] == ' ' || s[p.off] == '\t' || s[p.off] == '\n' || s[p.off] == '\r') {
		p.off++
	}
	start := p.off
	if start == len(s) {
		p.tok = token{kind: tokEOF, pos: start}
		return
	}
	c := s[start]
	switch {
	case punct(c) != tokBad:
		p.off++
		p.tok = token{kind: punct(c), pos: start, text: string(c)}
	case strings.HasPrefix(s[start:], "&&"):
		p.off += 2
		p.tok = token{kind: tokAnd, pos: start, text: "&&"}
	case strings.HasPrefix(s[start:], "||"):
		p.off += 2
		p.tok = token{kind: tokOr, pos: start, text: "||"}
	case c == '"' || c == '`':
		p.tok = p.quoted(start)
	case isIdent(c):
		for p.off < len(s) && isIdent(s[p.off]) {
			p.off++
		}
		p.tok = token{kind: tokIdent, pos: start, text: s[start:p.off]}
	default:
		p.off++
		p.tok = token{kind: tokBad, pos: start, text: fmt.Sprintf("character %q", c)}
		if c == '&' || c == '|' {
			p.tok.text += " (write && or ||)"
		}
	}
}

// quoted reads a "Go-escaped" or `raw` string starting at start.
func (p *parser) quoted(start int) token {
	s, q := p.src, p.src[start]
	for i := start + 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q == '"':
			i++ // the escaped character cannot end the string
		case s[i] == q:
			p.off = i + 1
			if q == '`' {
				return token{kind: tokString, pos: start, text: s[start+1 : i]}
			}
			v, err := strconv.Unquote(s[start : i+1])
			if err != nil {
				return token{kind: tokBad, pos: start, text: "a string with a bad escape"}
			}
			return token{kind: tokString, pos: start, text: v}
		}
	}
	p.off = len(s)
	return token{kind: tokBad, pos: start, text: "a string that is never closed"}
}

// punct is the one-character token c, else tokBad.
func punct(c byte) tokKind {
	switch c {
	case '(':
		return tokLParen
	case ')':
		return tokRParen
	case ',':
		return tokComma
	case '!':
		return tokNot
	}
	return tokBad
}

func isIdent(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}
