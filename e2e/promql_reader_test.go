package e2e

import (
	"slices"
	"strings"
	"testing"
)

// The PromQL reader of the monitoring check: it must find every selector
// and grouping label, and refuse what it cannot read.

func TestPromQLReaderFindsSelectorsAndGroupings(t *testing.T) {
	q, err := parsePromQL(`histogram_quantile(0.99, sum by (route, le) (rate(a_bucket{route=~"$route"}[$__rate_interval])))
		/ sum(rate(b_total{code=~"5..", x!='y'}[5m] offset 1h)) without (job) and c > 14 * 86400 # a comment
		or count(d == 0) by (instance)`)
	if err != nil {
		t.Fatal(err)
	}
	got := q.labelUses()
	want := map[string][]string{
		"a_bucket": {"route", "route", "le"},
		"b_total":  {"code", "x", "job"},
		"c":        nil,
		"d":        {"instance"},
	}
	if len(got) != len(want) {
		t.Fatalf("selectors %v, want %v", got, want)
	}
	for name, ls := range want {
		if !slices.Equal(got[name], ls) {
			t.Errorf("%s: labels %v, want %v", name, got[name], ls)
		}
	}
}

func TestPromQLReaderRefusesWhatItCannotCheck(t *testing.T) {
	for _, expr := range []string{
		`a * on (route) group_left b`,
		`{__name__="a"}`,
		`sum by route (a)`,
		`a{route~"x"}`,
		`a{route="x"`,
		`rate(a[5m]`,
		`sum by (route) (a`,
		`a @ 100`,
	} {
		if _, err := parsePromQL(expr); err == nil {
			t.Errorf("%q: no error", expr)
		}
	}
}

func TestCheckQueriesReportsRenamedMetricsAndLabels(t *testing.T) {
	series, err := parseExposition(strings.NewReader(`# HELP x y
levee_requests_total{code="200",route="a b"} 3
levee_request_duration_seconds_bucket{route="a",le="0.1"} 1
levee_request_duration_seconds_sum{route="a"} 1
levee_breaker_state{route="a\"}@x"} 1
levee_events_dropped_total 0
`))
	if err != nil {
		t.Fatal(err)
	}
	if !series["levee_breaker_state"]["route"] || !series["levee_requests_total"]["code"] || len(series["levee_events_dropped_total"]) != 0 {
		t.Fatalf("series %v", series)
	}
	ok := []monitoringQuery{
		{where: "ok", expr: `sum by (route) (rate(levee_requests_total{code=~"5.."}[5m]))`, prints: []string{"route"}},
		{where: "ok", expr: `histogram_quantile(0.5, sum by (instance, le) (rate(levee_request_duration_seconds_bucket[5m])))`, prints: []string{"instance"}},
	}
	if m := checkQueries(ok, series); len(m) != 0 {
		t.Fatalf("problems in good queries: %v", m)
	}
	for _, q := range []monitoringQuery{
		{where: "renamed", expr: `rate(levee_request_total[5m])`},
		{where: "no such label", expr: `sum by (backend) (levee_requests_total)`},
		{where: "le only on buckets", expr: `sum by (le) (levee_request_duration_seconds_sum)`},
		{where: "matcher", expr: `levee_breaker_state{state="1"}`},
		{where: "legend", expr: `sum(levee_events_dropped_total)`, prints: []string{"rout"}},
		{where: "no metric", expr: `time()`},
	} {
		if m := checkQueries([]monitoringQuery{q}, series); len(m) == 0 {
			t.Errorf("%s: %q passed", q.where, q.expr)
		}
	}
}
