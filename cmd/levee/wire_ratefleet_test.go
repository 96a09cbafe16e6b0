package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeReconciler is a fleet limit's reconciliations as the metrics read
// them.
type fakeReconciler struct {
	errors, synced int64
	local          bool
}

func (f fakeReconciler) Errors() int64 { return f.errors }
func (f fakeReconciler) Synced() int64 { return f.synced }
func (f fakeReconciler) Local() bool   { return f.local }

// The fleet limits' metrics: their names, help texts and values.
func TestFleetMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	registerFleetMetrics(reg, "levee_ratelimit_store_", "rate limits", "Rate-limit keys", fakeReconciler{errors: 3, synced: 7, local: true})
	registerFleetMetrics(reg, "levee_inflight_store_", "in-flight limits", "In-flight counters", fakeReconciler{errors: 1, synced: 2})
	want := map[string]struct {
		help  string
		value float64
	}{
		"levee_ratelimit_store_errors_total":      {"Reconciliations of the fleet rate limits with the breaker store that failed (the limits are then local, W059).", 3},
		"levee_ratelimit_store_keys_synced_total": {"Rate-limit keys reconciled with the breaker store.", 7},
		"levee_ratelimit_store_local":             {"1 while the fleet rate limits are enforced locally because the breaker store failed, else 0.", 1},
		"levee_inflight_store_errors_total":       {"Reconciliations of the fleet in-flight limits with the breaker store that failed (the limits are then local, W059).", 1},
		"levee_inflight_store_keys_synced_total":  {"In-flight counters reconciled with the breaker store.", 2},
		"levee_inflight_store_local":              {"1 while the fleet in-flight limits are enforced locally because the breaker store failed, else 0.", 0},
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != len(want) {
		t.Fatalf("%d metrics, want %d", len(mfs), len(want))
	}
	for _, mf := range mfs {
		w, ok := want[mf.GetName()]
		if !ok {
			t.Fatalf("unexpected metric %s", mf.GetName())
		}
		m := mf.GetMetric()[0]
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		if mf.GetHelp() != w.help || v != w.value {
			t.Errorf("%s: help %q value %v, want %q %v", mf.GetName(), mf.GetHelp(), v, w.help, w.value)
		}
	}
}
