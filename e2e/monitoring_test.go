package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The Grafana board and the alert rules shipped in docs/grafana
// (docs/monitoring.md) checked against the binary's /metrics: every metric
// they query exists, with every label they select or group by.

const (
	dashboardFile = "../docs/grafana/levee-dashboard.json"
	alertsFile    = "../docs/grafana/levee-alerts.yml"
	// alertsTestFile holds promtool's unit tests of the rules: series in,
	// alerts (labels and annotations) out.
	alertsTestFile = "../docs/grafana/levee-alerts.test.yml"
)

// targetLabels are the labels Prometheus adds to every scraped series;
// /metrics does not carry them.
var targetLabels = []string{"instance", "job"}

// monitoringQuery is one PromQL expression of the board or the rules, with
// where it is and the labels its legend or annotations print.
type monitoringQuery struct {
	where, expr string
	prints      []string
}

// grafanaDashboard is the part of the dashboard JSON the checks read.
type grafanaDashboard struct {
	Title         string                           `json:"title"`
	UID           string                           `json:"uid"`
	SchemaVersion int                              `json:"schemaVersion"`
	Panels        []grafanaPanel                   `json:"panels"`
	Templating    struct{ List []grafanaVariable } `json:"templating"`
}

type grafanaDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int                       `json:"id"`
	Type       string                    `json:"type"`
	Title      string                    `json:"title"`
	Datasource *grafanaDatasource        `json:"datasource"`
	GridPos    *struct{ H, W, X, Y int } `json:"gridPos"`
	Targets    []struct {
		RefID        string             `json:"refId"`
		Expr         string             `json:"expr"`
		LegendFormat string             `json:"legendFormat"`
		Datasource   *grafanaDatasource `json:"datasource"`
	} `json:"targets"`
}

type grafanaVariable struct {
	Type       string             `json:"type"`
	Name       string             `json:"name"`
	Query      any                `json:"query"`
	Datasource *grafanaDatasource `json:"datasource"`
}

type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

func readAlerts(t *testing.T) alertRules {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var r alertRules
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	return r
}

var (
	legendLabel     = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	annotationLabel = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
	labelValues     = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
)

func submatches(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// monitoringQueries lists every query of the board (panels and template
// variables, label_values(m, l) as the selector m{l=~".*"}) and the rules.
func monitoringQueries(t *testing.T) []monitoringQuery {
	t.Helper()
	var out []monitoringQuery
	d := readDashboard(t)
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			out = append(out, monitoringQuery{where: fmt.Sprintf("panel %q target %s", p.Title, tg.RefID),
				expr: tg.Expr, prints: submatches(legendLabel, tg.LegendFormat)})
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		s, _ := q["query"].(string)
		m := labelValues.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(metric, label)", v.Name, s)
		}
		out = append(out, monitoringQuery{where: "variable " + v.Name, expr: fmt.Sprintf(`%s{%s=~".*"}`, m[1], m[2])})
	}
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			var prints []string
			for _, a := range r.Annotations {
				prints = append(prints, submatches(annotationLabel, a)...)
			}
			out = append(out, monitoringQuery{where: "alert " + r.Alert, expr: r.Expr, prints: prints})
		}
	}
	return out
}

// scrapeSeries reads /metrics in the text format into the label names
// seen on each series name (histograms as their _bucket, _sum, _count).
func scrapeSeries(p *leveeProc) (map[string]map[string]bool, error) {
	resp, err := http.Get(p.apiURL() + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /metrics = %d", resp.StatusCode)
	}
	return parseExposition(resp.Body)
}

// parseExposition reads the Prometheus text format: `name{l="v",...} value`.
func parseExposition(r io.Reader) (map[string]map[string]bool, error) {
	out := map[string]map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		name, labels, hasLabels := strings.Cut(name, "{")
		if hasLabels {
			// the label set may hold spaces in its values: take it whole
			i := strings.Index(line, "{")
			j := strings.LastIndex(line, "}")
			if j < i {
				return nil, fmt.Errorf("cannot read the series %q", line)
			}
			labels, rest = line[i+1:j], line[j+1:]
		}
		if strings.TrimSpace(rest) == "" {
			return nil, fmt.Errorf("series %q has no value", line)
		}
		set := out[name]
		if set == nil {
			set = map[string]bool{}
			out[name] = set
		}
		for labels != "" {
			l, v, ok := strings.Cut(labels, `="`)
			if !ok {
				return nil, fmt.Errorf("cannot read the labels of %q", line)
			}
			set[strings.TrimLeft(l, ",")] = true
			k := 0 // the closing quote, skipping escaped ones
			for k < len(v) && v[k] != '"' {
				if v[k] == '\\' {
					k++
				}
				k++
			}
			if k >= len(v) {
				return nil, fmt.Errorf("unterminated label value in %q", line)
			}
			labels = v[k+1:]
		}
	}
	return out, sc.Err()
}

// checkQueries returns what the queries need that the series lack.
func checkQueries(qs []monitoringQuery, series map[string]map[string]bool) []string {
	var missing []string
	for _, q := range qs {
		pq, err := parsePromQL(q.expr)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s: %v", q.where, err))
			continue
		}
		if len(pq.selectors) == 0 {
			missing = append(missing, fmt.Sprintf("%s: no metric in %q", q.where, q.expr))
		}
		absent := false
		known := map[string]bool{}
		for _, l := range targetLabels {
			known[l] = true
		}
		for name, labels := range pq.labelUses() {
			have, ok := series[name]
			if !ok {
				missing = append(missing, fmt.Sprintf("%s: no series %s in /metrics", q.where, name))
				absent = true
				continue
			}
			for l := range have {
				known[l] = true
			}
			for _, l := range labels {
				if !have[l] && !slices.Contains(targetLabels, l) {
					missing = append(missing, fmt.Sprintf("%s: %s has no label %q (it has %v)", q.where, name, l, sortedKeys(have)))
				}
			}
		}
		for _, l := range q.prints {
			if !absent && !known[l] {
				missing = append(missing, fmt.Sprintf("%s prints the label %q no metric of %q has", q.where, l, q.expr))
			}
		}
	}
	return missing
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMonitoringQueriesMatchMetrics runs the binary with every source of
// series the board and the rules read: per-route latency, retries, a
// breaker opened and refusing, another answering stale, a policy refusal,
// a TLS listener with a certificate and a failed handshake, a Docker
// provider that cannot reach its engine and a breaker store that cannot be
// reached (so its breakers fall back). Then every query must find its
// metrics and labels in /metrics.
func TestMonitoringQueriesMatchMetrics(t *testing.T) {
	queries := monitoringQueries(t)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer backend.Close()
	ca, certs := newE2ECA(t), t.TempDir()
	ca.issue(t, certs, "shop", "shop.test")
	closed, err := net.Listen("tcp", "127.0.0.1:0") // a port nobody answers on: the store is down
	if err != nil {
		t.Fatal(err)
	}
	storeAddr := closed.Addr().String()
	closed.Close()

	p := startLevee(t, "--docker=true", "--docker-host", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"),
		"--listen", "websecure=127.0.0.1:0,tls", "--tls-cert-dir", certs,
		"--metrics-route-latency",
		"--breaker-store", "redis://"+storeAddr+"/0", "--breaker-store-flush-interval", "20ms",
		"--breaker-store-fallback-flushes", "2", "--breaker-store-fallback-after", "100ms")
	port := portOf(t, backend.URL)
	createEntrypoint(t, p, `{"name":"app","backends":[{"address":"127.0.0.1","port":`+port+`}],
		"config":{"hostnames":["app.test"],"circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":60}}}`)
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer failing.Close()
	createEntrypoint(t, p, `{"name":"retrying","backends":[{"address":"127.0.0.1","port":`+portOf(t, failing.URL)+`},
		{"address":"127.0.0.1","port":`+port+`}],"config":{"hostnames":["retrying.test"],"retry":{"attempts":2}}}`)
	createEntrypoint(t, p, `{"name":"cached","backends":[{"address":"127.0.0.1","port":`+port+`}],
		"config":{"hostnames":["cached.test"],"circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":60,"serve_stale":"1m"}}}`)
	createEntrypoint(t, p, `{"name":"guarded","backends":[{"address":"127.0.0.1","port":`+port+`}],
		"config":{"hostnames":["guarded.test"],"ip_allow_list":{"source_range":["192.0.2.0/24"]}}}`)

	waitFor(t, "the route app", func() error {
		if st, _, body, err := tryGet(p.proxyURL()+"/", "app.test"); err != nil || st != 200 {
			return fmt.Errorf("status %d %q %v", st, body, err)
		}
		return nil
	})
	for range 4 { // round robin: at least one request meets the failing backend first
		if st, _, _ := get(t, p.proxyURL()+"/", "retrying.test"); st != 200 {
			t.Fatalf("retrying.test = %d, want 200 from the backend that answers", st)
		}
	}
	if st, _, _ := get(t, p.proxyURL()+"/", "guarded.test"); st != http.StatusForbidden {
		t.Fatalf("guarded.test from 127.0.0.1 = %d, want 403 (the allow-list refusal)", st)
	}
	get(t, p.proxyURL()+"/", "cached.test")
	openBreaker(t, p, "app")
	openBreaker(t, p, "cached")
	if st, _, _ := get(t, p.proxyURL()+"/", "app.test"); st != http.StatusServiceUnavailable {
		t.Fatalf("app.test with its breaker open = %d, want 503", st)
	}
	// a stale answer, or 503 when none was kept: a fallback either way
	if st, hdr, _ := get(t, p.proxyURL()+"/", "cached.test"); st != http.StatusServiceUnavailable && hdr.Get("X-Levee-Stale") == "" {
		t.Fatalf("cached.test with its breaker open = %d without X-Levee-Stale", st)
	}
	failHandshake(t, p.listenerAddr("websecure"))

	waitFor(t, "every metric and label the board and the rules read", func() error {
		series, err := scrapeSeries(p)
		if err != nil {
			return err
		}
		if missing := checkQueries(queries, series); len(missing) > 0 {
			return fmt.Errorf("%d problems:\n%s", len(missing), strings.Join(missing, "\n"))
		}
		return nil
	})
	t.Logf("%d queries of %s and %s found their metrics and labels", len(queries), dashboardFile, alertsFile)
}

// failHandshake sends plain HTTP to a TLS listener: a failed handshake.
func failHandshake(t *testing.T, addr string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: shop.test\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, c) // until the listener closes the connection
}

// TestGrafanaDashboardIsImportable checks the board is dashboard JSON
// Grafana imports into any instance: a schema version, a data source
// template variable every panel and target uses (no instance's data
// source uid baked in), unique panel ids, panels on the 24-column grid
// without overlapping, and targets with a query each.
func TestGrafanaDashboardIsImportable(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" || d.SchemaVersion < 36 {
		t.Fatalf("title %q, uid %q, schemaVersion %d: want a title, a uid and schemaVersion >= 36", d.Title, d.UID, d.SchemaVersion)
	}
	hasDS := slices.ContainsFunc(d.Templating.List, func(v grafanaVariable) bool {
		return v.Type == "datasource" && v.Name == "datasource" && v.Query == "prometheus"
	})
	if !hasDS {
		t.Fatal(`no template variable {"type":"datasource","name":"datasource","query":"prometheus"}`)
	}
	const ds = "${datasource}"
	usesDS := func(d *grafanaDatasource) bool { return d != nil && d.Type == "prometheus" && d.UID == ds }
	for _, v := range d.Templating.List {
		if v.Type == "query" && !usesDS(v.Datasource) {
			t.Errorf("variable %s: datasource %+v, want prometheus %s", v.Name, v.Datasource, ds)
		}
	}
	ids := map[int]bool{}
	queries := 0
	for i, p := range d.Panels {
		for _, q := range d.Panels[:i] {
			if overlap(p, q) {
				t.Errorf("panels %q and %q overlap: %+v %+v", p.Title, q.Title, p.GridPos, q.GridPos)
			}
		}
		if p.ID == 0 || ids[p.ID] {
			t.Errorf("panel %q: id %d missing or taken", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if !slices.Contains([]string{"timeseries", "state-timeline", "table", "stat", "bargauge"}, p.Type) || p.Title == "" {
			t.Errorf("panel %d %q: type %q", p.ID, p.Title, p.Type)
		}
		if !usesDS(p.Datasource) || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v, %d targets: want %s and targets", p.Title, p.Datasource, len(p.Targets), ds)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" || refs[tg.RefID] || !usesDS(tg.Datasource) {
				t.Errorf("panel %q: target %+v: want an expr, a unique refId and datasource %s", p.Title, tg, ds)
			}
			refs[tg.RefID] = true
			queries++
		}
	}
	if queries < 20 {
		t.Fatalf("%d queries on the board: the panels are missing", queries)
	}
}

// overlap reports whether two panels' grid rectangles intersect.
func overlap(a, b grafanaPanel) bool {
	if a.GridPos == nil || b.GridPos == nil {
		return false
	}
	p, q := a.GridPos, b.GridPos
	return p.X < q.X+q.W && q.X < p.X+p.W && p.Y < q.Y+q.H && q.Y < p.Y+p.H
}

// TestPrometheusRulesAreValid reads the rules: every rule an alert with an
// expression, a severity and a summary. With promtool installed, also
// promtool check rules (Prometheus's parser) and promtool test rules (each
// alert fires on the series it is for, and not on the near misses).
func TestPrometheusRulesAreValid(t *testing.T) {
	r := readAlerts(t)
	n := 0
	for _, g := range r.Groups {
		for _, rule := range g.Rules {
			n++
			if rule.Alert == "" || rule.Expr == "" || rule.Annotations["summary"] == "" ||
				!slices.Contains([]string{"warning", "critical"}, rule.Labels["severity"]) {
				t.Errorf("group %s: rule %+v: want alert, expr, severity warning|critical and a summary", g.Name, rule)
			}
			if rule.For != "" {
				if _, err := time.ParseDuration(rule.For); err != nil {
					t.Errorf("alert %s: for %q: %v", rule.Alert, rule.For, err)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no rules")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool not in PATH (apt-get install prometheus): promtool check rules skipped")
		return
	}
	if out, err := exec.Command(promtool, "check", "rules", alertsFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	if out, err := exec.Command(promtool, "test", "rules", alertsTestFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
