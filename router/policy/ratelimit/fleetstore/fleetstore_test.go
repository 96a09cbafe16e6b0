package fleetstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/levee-proxy/levee/breaker/fleet"
	"github.com/levee-proxy/levee/breaker/fleet/redistest"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

func newStore(t *testing.T, url, replica string) (*Store, redis.UniversalClient) {
	t.Helper()
	c, err := fleet.NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	s, err := New(Options{Client: c, Prefix: "test:", Replica: replica})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func reconcile(t *testing.T, s *Store, spent int64) ratelimit.Budget {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	bs, err := s.Reconcile(ctx, []ratelimit.Spend{{Route: "app@docker", Key: "ip:192.0.2.1", Spent: spent, Rate: 10, Burst: 10}})
	if err != nil {
		t.Fatal(err)
	}
	return bs[0]
}

// near: the store refills by its own clock between two calls, so a
// figure may be a little above the exact one.
func near(got, want float64) bool { return got >= want && got < want+0.5 }

// The script against a real redis-server: replicas charge one bucket,
// it refills by elapsed store time up to the burst, is overspent at most
// its burst, survives a SCRIPT FLUSH, and a store that is gone or holds
// garbage is an error (the policy then fails to local).
func TestReconcileAgainstRedis(t *testing.T) {
	srv := redistest.Start(t)
	a, cli := newStore(t, srv.URL(), "a")
	b, _ := newStore(t, srv.URL(), "b")
	ctx := context.Background()

	if bg := reconcile(t, a, 3); !near(bg.Tokens, 7) || bg.Replicas != 1 {
		t.Fatalf("first spend of 3 from a bucket of 10: %+v, want 7 tokens, 1 replica", bg)
	}
	if bg := reconcile(t, b, 2); !near(bg.Tokens, 5) || bg.Replicas != 2 {
		t.Fatalf("b spends 2: %+v, want 5 tokens, 2 replicas", bg)
	}
	if bg := reconcile(t, a, 100); bg.Tokens != -10 {
		t.Fatalf("overspent: %+v, want the floor -10 (minus the burst)", bg)
	}
	// One second of store time passes: 10 tokens back.
	key := "test:rl:{app@docker}:ip:192.0.2.1"
	ts, err := cli.HGet(ctx, key, "ts").Int64()
	if err != nil {
		t.Fatal(err)
	}
	cli.HSet(ctx, key, "ts", strconv.FormatInt(ts-1000, 10))
	if bg := reconcile(t, a, 0); !near(bg.Tokens, 0) {
		t.Fatalf("after 1s at 10/s from -10: %+v, want 0", bg)
	}
	cli.HSet(ctx, key, "ts", strconv.FormatInt(ts-60_000, 10))
	if bg := reconcile(t, a, 0); bg.Tokens != 10 {
		t.Fatalf("after a minute: %+v, want the burst 10, not more", bg)
	}
	if d := cli.PTTL(ctx, key).Val(); d <= 0 || d > minTTL {
		t.Fatalf("bucket TTL %v, want about %v", d, minTTL)
	}
	// A store that forgot the script (restart, SCRIPT FLUSH) loads it again.
	if err := cli.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if bg := reconcile(t, a, 1); !near(bg.Tokens, 9) {
		t.Fatalf("after SCRIPT FLUSH: %+v, want 9", bg)
	}
	// Garbage: the bucket's key holds a string.
	cli.Set(ctx, key, "x", 0)
	if _, err := a.Reconcile(ctx, []ratelimit.Spend{{Route: "app@docker", Key: "ip:192.0.2.1", Spent: 1, Rate: 10, Burst: 10}}); err == nil {
		t.Fatal("a bucket key of the wrong type reconciled")
	}
	// Gone: an error within the caller's deadline, PING included.
	srv.Stop()
	tctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := a.Reconcile(tctx, []ratelimit.Spend{{Route: "app@docker", Key: "k", Spent: 1, Rate: 10, Burst: 10}}); err == nil {
		t.Fatal("a stopped store reconciled")
	}
	if _, err := a.Reconcile(tctx, nil); err == nil {
		t.Fatal("a stopped store answered the PING")
	}
}
