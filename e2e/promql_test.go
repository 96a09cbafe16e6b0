package e2e

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// A small reader of the PromQL the shipped Grafana board and alert rules
// use (docs/grafana): it finds every metric selector with the label names
// its matchers use, and the labels each aggregation groups by together
// with the selectors inside it. It is not a PromQL parser: what it does
// not understand (vector matching with on/ignoring, a selector without a
// name, an unknown character) is an error, so a query it cannot check
// fails the test instead of passing unchecked.

// promSelector is one metric selector: its name and its matchers' labels.
type promSelector struct {
	name   string
	labels []string
	at     int // token index, to place it inside an aggregation
}

// promGrouping is an aggregation's by/without list and the token range of
// its argument.
type promGrouping struct {
	labels     []string
	start, end int
}

// promQuery is what a query reads.
type promQuery struct {
	selectors []promSelector
	groupings []promGrouping
}

// labelUses returns, per selector, every label the query needs on it:
// its matchers' labels and the grouping labels of each aggregation around
// it (a grouping label absent from a series would silently merge series).
func (q promQuery) labelUses() map[string][]string {
	out := map[string][]string{}
	for _, s := range q.selectors {
		ls := append([]string(nil), s.labels...)
		for _, g := range q.groupings {
			if s.at > g.start && s.at < g.end {
				ls = append(ls, g.labels...)
			}
		}
		out[s.name] = append(out[s.name], ls...)
	}
	return out
}

type promToken struct {
	kind byte // 'i' identifier, 's' string, 'n' number or duration, 'r' range, 'v' $variable, 'p' punctuation or operator
	text string
}

// promAggregations are PromQL's aggregation operators (they take by/without).
var promAggregations = []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
	"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}

// promKeywords are identifiers that are neither metrics nor functions.
var promKeywords = []string{"and", "or", "unless", "bool", "offset", "inf", "nan"}

func tokenizePromQL(s string) ([]promToken, error) {
	var out []promToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#': // a comment runs to the end of the line
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(s) && s[j] != c {
				if s[j] == '\\' && c != '`' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil, fmt.Errorf("unterminated string at %d in %q", i, s)
			}
			out = append(out, promToken{'s', s[i+1 : j]})
			i = j + 1
		case c == '[': // a range or subquery: its contents are durations and variables
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unterminated range at %d in %q", i, s)
			}
			out = append(out, promToken{'r', s[i : i+j+1]})
			i += j + 1
		case c == '$':
			j := i + 1
			for j < len(s) && (isPromIdent(s[j]) || s[j] == '{' || s[j] == '}') {
				j++
			}
			out = append(out, promToken{'v', s[i:j]})
			i = j
		case isPromIdent(c) && !unicode.IsDigit(rune(c)):
			j := i
			for j < len(s) && (isPromIdent(s[j]) || s[j] == ':') {
				j++
			}
			out = append(out, promToken{'i', s[i:j]})
			i = j
		case unicode.IsDigit(rune(c)) || c == '.':
			j := i
			for j < len(s) && (isPromIdent(s[j]) || s[j] == '.') {
				j++
			}
			out = append(out, promToken{'n', s[i:j]})
			i = j
		case strings.ContainsRune("(){},+-*/%^", rune(c)):
			out = append(out, promToken{'p', string(c)})
			i++
		case strings.ContainsRune("=!<>", rune(c)):
			j := i + 1
			if j < len(s) && (s[j] == '=' || s[j] == '~') {
				j++
			}
			out = append(out, promToken{'p', s[i:j]})
			i = j
		default:
			return nil, fmt.Errorf("unexpected %q at %d in %q", c, i, s)
		}
	}
	return out, nil
}

func isPromIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// parsePromQL reads the selectors and groupings of expr.
func parsePromQL(expr string) (promQuery, error) {
	toks, err := tokenizePromQL(expr)
	if err != nil {
		return promQuery{}, err
	}
	var q promQuery
	if err := checkBalance(toks); err != nil {
		return q, fmt.Errorf("%w in %q", err, expr)
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		if t.kind == 'p' && t.text == "{" {
			return q, fmt.Errorf("a selector without a metric name in %q", expr)
		}
		if t.kind != 'i' {
			continue
		}
		next := func(k int) promToken {
			if k < len(toks) {
				return toks[k]
			}
			return promToken{}
		}
		switch {
		case slices.Contains(promAggregations, t.text):
			g, err := parseGrouping(toks, i+1)
			if err != nil {
				return q, fmt.Errorf("%s in %q: %w", t.text, expr, err)
			}
			q.groupings = append(q.groupings, g)
		case t.text == "by" || t.text == "without":
			// read by parseGrouping with its aggregation; skip the list
			for i < len(toks) && toks[i].text != ")" {
				i++
			}
		case t.text == "on" || t.text == "ignoring" || t.text == "group_left" || t.text == "group_right":
			return q, fmt.Errorf("vector matching (%s) is beyond this checker: %q", t.text, expr)
		case slices.Contains(promKeywords, strings.ToLower(t.text)):
			if t.text == "offset" {
				i++
			}
		case next(i+1).text == "(":
			// a function call: its arguments are read as they come
		default:
			s := promSelector{name: t.text, at: i}
			if next(i+1).text == "{" {
				end, labels, err := parseMatchers(toks, i+2)
				if err != nil {
					return q, fmt.Errorf("selector %s in %q: %w", t.text, expr, err)
				}
				s.labels, i = labels, end
			}
			q.selectors = append(q.selectors, s)
		}
	}
	return q, nil
}

// checkBalance reports unbalanced parentheses or braces.
func checkBalance(toks []promToken) error {
	var open []string
	for _, t := range toks {
		if t.kind != 'p' {
			continue
		}
		switch t.text {
		case "(", "{":
			open = append(open, t.text)
		case ")", "}":
			want := map[string]string{")": "(", "}": "{"}[t.text]
			if len(open) == 0 || open[len(open)-1] != want {
				return fmt.Errorf("unbalanced %s", t.text)
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("unclosed %s", open[len(open)-1])
	}
	return nil
}

// parseMatchers reads `label op "value", ...}` from toks[i] and returns the
// index of the closing brace and the labels.
func parseMatchers(toks []promToken, i int) (int, []string, error) {
	var labels []string
	for ; i < len(toks); i++ {
		if toks[i].text == "}" {
			return i, labels, nil
		}
		if toks[i].text == "," {
			continue
		}
		if i+2 >= len(toks) || toks[i].kind != 'i' || toks[i+2].kind != 's' ||
			!slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1].text) {
			return 0, nil, fmt.Errorf("cannot read the matcher at %q", toks[i].text)
		}
		labels = append(labels, toks[i].text)
		i += 2
	}
	return 0, nil, fmt.Errorf("no closing brace")
}

// parseGrouping reads an aggregation from just after its name: an optional
// by/without list, the parenthesised argument, and an optional by/without
// list after it.
func parseGrouping(toks []promToken, i int) (promGrouping, error) {
	var g promGrouping
	readList := func() error {
		if i < len(toks) && (toks[i].text == "by" || toks[i].text == "without") {
			if i+1 >= len(toks) || toks[i+1].text != "(" {
				return fmt.Errorf("%s without a label list", toks[i].text)
			}
			for i += 2; i < len(toks) && toks[i].text != ")"; i++ {
				if toks[i].text == "," {
					continue
				}
				if toks[i].kind != 'i' {
					return fmt.Errorf("cannot read the label %q", toks[i].text)
				}
				g.labels = append(g.labels, toks[i].text)
			}
			i++
		}
		return nil
	}
	if err := readList(); err != nil {
		return g, err
	}
	if i >= len(toks) || toks[i].text != "(" {
		return g, fmt.Errorf("no argument")
	}
	g.start = i
	depth := 0
	for ; i < len(toks); i++ {
		switch toks[i].text {
		case "(":
			depth++
		case ")":
			depth--
		}
		if depth == 0 {
			break
		}
	}
	if depth != 0 {
		return g, fmt.Errorf("unbalanced parentheses")
	}
	g.end = i
	i++
	return g, readList()
}
