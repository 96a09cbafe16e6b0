package proxy

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/status"
)

// breakerCycle drives the breaker of route "web" through every transition
// a user sees: opened by a rule, half-open after the cooldown (checked
// while the probe hangs), closed by the probe, then opened and closed by
// an operator. It returns the breaker events in order.
func breakerCycle(t *testing.T, h *harness) []status.BreakerEvent {
	t.Helper()
	events, cancel := h.r.Subscribe(64)
	defer cancel()
	a := newBackend(t, "a")
	h.set(config.SourceDocker, withBreaker(ep("web", a.backend()), ratioParams()))
	tripped(t, h, "web", "web.test")
	h.clock.Advance(10 * time.Second)

	probe := make(chan int, 1)
	go func() {
		resp := h.do(http.MethodGet, "web.test", "/hang", nil)
		resp.Body.Close()
		probe <- resp.StatusCode
	}()
	waitArrived(t, a)
	st, ok := h.r.Breaker("web")
	if !ok {
		t.Fatal("route web has no breaker")
	}
	if st.State != "half-open" || st.LastTransition == nil ||
		st.LastTransition.Event != "half-open" || st.LastTransition.To != "half-open" {
		t.Errorf("API view while probing: state %q, last transition %+v; want half-open", st.State, st.LastTransition)
	}
	a.unhang()
	if code := <-probe; code != http.StatusOK {
		t.Fatalf("probe answered %d", code)
	}
	for _, action := range []string{status.ActionOpen, status.ActionClose} {
		if err := h.r.ControlBreaker("web", action, "alice"); err != nil {
			t.Fatal(err)
		}
	}

	// Each transition publishes its event after logging and counting it,
	// so once the fifth event is in, logs and metrics are complete.
	var got []status.BreakerEvent
	deadline := time.After(10 * time.Second)
	for len(got) < 5 {
		select {
		case e := <-events:
			if be, ok := e.Data.(status.BreakerEvent); ok {
				got = append(got, be)
			}
		case <-deadline:
			t.Fatalf("breaker events so far: %+v", got)
		}
	}
	return got
}

// The half-open state has one spelling, "half-open", in the API (state,
// last_transition), the events (event, from, to) and the logs (event
// breaker_half-open, from, to); "half_open" appears nowhere.
func TestHalfOpenIsSpelledOneWayEverywhere(t *testing.T) {
	h := newHarness(t, Options{})
	evs := breakerCycle(t, h)

	type row struct{ event, from, to, rule string }
	want := []row{
		{"opened", "closed", "open", "error_ratio"},
		{"half-open", "open", "half-open", ""},
		{"closed", "half-open", "closed", ""},
		{"opened", "closed", "open", "manual"},
		{"closed", "open", "closed", "manual"},
	}
	for i, be := range evs {
		if got := (row{be.Event, be.From, be.To, be.Rule}); got != want[i] {
			t.Errorf("event %d: %+v, want %+v", i, got, want[i])
		}
		b, err := json.Marshal(be)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "half_open") {
			t.Errorf("event payload %s spells half_open", b)
		}
	}

	logs := h.logs.String()
	if strings.Contains(logs, "half_open") {
		t.Errorf("logs spell half_open:\n%s", logs)
	}
	var lines []row
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		ev, _ := m["event"].(string)
		from, _ := m["from"].(string)
		to, _ := m["to"].(string)
		if !strings.HasPrefix(ev, "breaker_") || ev == "breaker_control" {
			continue
		}
		rule, hasRule := m["rule"].(string)
		if hasRule && rule == "" {
			t.Errorf("log line with an empty rule: %s", sc.Text())
		}
		lines = append(lines, row{strings.TrimPrefix(ev, "breaker_"), from, to, rule})
	}
	if len(lines) != len(want) {
		t.Fatalf("breaker log lines %+v, want %d", lines, len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("log line %d: %+v, want %+v", i, lines[i], want[i])
		}
	}
}

// No series carries an empty label value: transitions without a trip rule
// count under rule="none".
func TestNoMetricSeriesHasAnEmptyLabelValue(t *testing.T) {
	h := newHarness(t, Options{})
	breakerCycle(t, h)
	h.get("nowhere.test", "/")

	for _, c := range []struct {
		to, rule string
		want     float64
	}{
		{"open", "error_ratio", 1},
		{"half-open", noRule, 1},
		{"closed", noRule, 1},
		{"open", "manual", 1},
		{"closed", "manual", 1},
	} {
		labels := map[string]string{"route": "web", "to": c.to, "rule": c.rule}
		if got := metricValue(t, h, "levee_breaker_transitions_total", labels); got != c.want {
			t.Errorf("levee_breaker_transitions_total%v = %v, want %v", labels, got, c.want)
		}
	}
	mfs, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetValue() == "" {
					t.Errorf("%s has a series with %s=\"\"", mf.GetName(), lp.GetName())
				}
			}
		}
	}
}

// noRule is the router's rule label for transitions no trip rule caused.
const noRule = "none"
