package fleet

import (
	"context"
	"fmt"
	"testing"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/fleet/redistest"
)

// TestTopologies runs the fleet's core (a trip on combined evidence,
// exact counts, fleet-wide control) on a Redis Cluster and through a
// Sentinel.
func TestTopologies(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"cluster", func(t *testing.T) string { return redistest.StartCluster(t, 3) }},
		{"sentinel", func(t *testing.T) string { return redistest.StartSentinel(t, redistest.Start(t)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := tc.url(t)
			// several breakers, so that a cluster spreads them over slots
			for _, name := range []string{"a", "b", "c"} {
				rs := threeNamed(t, url, name, fleetParams)
				for _, r := range rs {
					report(r.b, 8, breaker.Success)
					report(r.b, 12, breaker.Failure)
				}
				flushAll(rs...)
				for i, r := range rs {
					eventually(t, fmt.Sprintf("%s: replica %d open", name, i), func() bool { return r.b.State() == breaker.Open })
				}
				if c := counts(t, url, rs[0].s.CountsKey(name)); c["success"] != 24 || c["failure"] != 36 {
					t.Fatalf("%s: counts %v, want success 24 failure 36", name, c)
				}
				if err := rs[2].s.Control(context.Background(), name, "close", "op"); err != nil {
					t.Fatal(err)
				}
				for i, r := range rs {
					eventually(t, fmt.Sprintf("%s: replica %d closed", name, i), func() bool { return r.b.State() == breaker.Closed })
				}
			}
		})
	}
}
