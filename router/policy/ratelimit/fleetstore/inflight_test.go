package fleetstore

import (
	"context"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker/fleet/redistest"
	"github.com/levee-proxy/levee/router/policy/inflight"
)

func report(t *testing.T, s *Store, n int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := s.Report(ctx, []inflight.Count{{Route: "app@docker", Key: "ip:192.0.2.1", InFlight: n}})
	if err != nil {
		t.Fatal(err)
	}
	return got[0]
}

// The count script against a real redis-server: each replica hears the
// sum of the others' counts, a zero removes the replica's count, a count
// older than Live no longer counts (a dead replica), the script survives
// a SCRIPT FLUSH, and a store that is gone or holds garbage is an error
// (the policy then fails to local).
func TestReportAgainstRedis(t *testing.T) {
	srv := redistest.Start(t)
	a, cli := newStore(t, srv.URL(), "a")
	b, _ := newStore(t, srv.URL(), "b")
	c, _ := newStore(t, srv.URL(), "c")
	ctx := context.Background()
	key := "test:if:{app@docker}:ip:192.0.2.1"

	if got := report(t, a, 3); got != 0 {
		t.Fatalf("a first: others %d, want 0", got)
	}
	if got := report(t, b, 2); got != 3 {
		t.Fatalf("b: others %d, want a's 3", got)
	}
	if got := report(t, c, 0); got != 5 {
		t.Fatalf("c with none: others %d, want 5", got)
	}
	if got := report(t, a, 1); got != 2 {
		t.Fatalf("a again: others %d, want b's 2", got)
	}
	if d := cli.PTTL(ctx, key).Val(); d <= 0 || d > DefaultLive {
		t.Fatalf("counter TTL %v, want about %v", d, DefaultLive)
	}
	// b's report grown older than Live: b no longer counts.
	cli.HSet(ctx, key, "b", "2:1000")
	if got := report(t, c, 0); got != 1 {
		t.Fatalf("b's count stale: others %d, want a's 1", got)
	}
	if cli.HExists(ctx, key, "b").Val() {
		t.Fatal("a stale count was kept")
	}
	// a's requests ended: its field goes, and the empty key with it.
	if got := report(t, a, 0); got != 0 {
		t.Fatalf("a at zero: others %d", got)
	}
	if n := cli.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("a counter with no replica in flight was kept")
	}
	if err := cli.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	report(t, b, 4)
	if got := report(t, a, 0); got != 4 {
		t.Fatalf("after SCRIPT FLUSH: others %d, want 4", got)
	}
	// Garbage: a field that is not count:ms.
	cli.HSet(ctx, key, "x", "many")
	if _, err := a.Report(ctx, []inflight.Count{{Route: "app@docker", Key: "ip:192.0.2.1", InFlight: 1}}); err == nil {
		t.Fatal("a garbage count was summed")
	}
	srv.Stop()
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := a.Report(tctx, []inflight.Count{{Route: "app@docker", Key: "k", InFlight: 1}}); err == nil {
		t.Fatal("a stopped store answered")
	}
	if _, err := a.Report(tctx, nil); err == nil {
		t.Fatal("a stopped store answered the PING")
	}
}
