// Package fleetstore keeps the fleet rate limits' buckets and the fleet
// in-flight limits' counts in Redis (the breaker store, --breaker-store):
// ratelimit.SharedBuckets for rateLimit.scope=fleet and
// inflight.SharedCounts for inFlight.scope=fleet.
//
// One Lua script per bucket, atomic in Redis, charges what a replica
// admitted since its last reconciliation, refills the bucket by the
// store's own clock (Redis TIME, so replicas' clocks do not matter) at
// the route's average up to its burst, and answers the tokens left and
// the number of replicas that reconciled the route within Live. A bucket
// may be overspent (a replica spends its share before it hears of the
// others') down to minus its burst, which later refills repay.
//
// Keys, under a Redis Cluster hash tag per route so that one script
// touches one slot: <prefix>rl:{<route>}:<key> (hash: tokens, ts) and
// <prefix>rl:{<route>}:replicas (hash: replica -> last reconciliation).
// They expire when unused for TTL (at least a minute, or twice the time
// the bucket takes to refill), after which the bucket starts full.
//
// An in-flight counter is <prefix>if:{<route>}:<key>, a hash of replica
// -> "count:ms" (the store's time of the replica's last report; a
// replica with none in flight has no field). A script per counter, atomic
// in Redis, records the replica's count and answers the sum of the other
// replicas' counts reported within Live; older ones are deleted, so a
// replica that died stops counting after Live, and the key expires Live
// after the last report of a count.
package fleetstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

// DefaultLive is how long a replica counts as spending from a route
// after its last reconciliation of it, and how long its in-flight counts
// count, at the default flush interval.
const DefaultLive = 2 * time.Second

// minTTL is the least a bucket's keys outlive their last use.
const minTTL = time.Minute

// Options configure a Store.
type Options struct {
	// Client is the Redis client (breaker/fleet.NewClient); required.
	Client redis.UniversalClient
	// Prefix starts every key (the breaker store's prefix).
	Prefix string
	// Replica names this process among the route's replicas; required.
	Replica string
	// Live: see DefaultLive (default: DefaultLive, at least ten flush
	// intervals of the caller).
	Live time.Duration
}

// Store is the Redis side of the fleet rate limits.
type Store struct {
	opts Options
}

// New returns a Store over o.Client.
func New(o Options) (*Store, error) {
	if o.Client == nil || o.Replica == "" {
		return nil, errors.New("fleetstore: a client and a replica name are required")
	}
	if o.Live <= 0 {
		o.Live = DefaultLive
	}
	return &Store{opts: o}, nil
}

// script is the reconciliation of one bucket. KEYS: the bucket, the
// route's replicas. ARGV: spent, rate (tokens a second), burst, replica,
// live (ms), ttl (ms). Reply: {tokens as a string, replicas}.
var script = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local spent = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local live = tonumber(ARGV[5])
local ttl = tonumber(ARGV[6])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1])
local ts = tonumber(v[2])
if tokens == nil or ts == nil then
  tokens = burst
  ts = now
end
if now > ts then tokens = tokens + (now - ts) * rate / 1000 end
if tokens > burst then tokens = burst end
tokens = tokens - spent
if tokens < -burst then tokens = -burst end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('HSET', KEYS[2], ARGV[4], now)
redis.call('PEXPIRE', KEYS[2], ttl)
local m = redis.call('HGETALL', KEYS[2])
local n = 0
for i = 1, #m, 2 do
  if now - tonumber(m[i + 1]) <= live then
    n = n + 1
  else
    redis.call('HDEL', KEYS[2], m[i])
  end
end
return {tostring(tokens), n}
`)

// Reconcile implements ratelimit.SharedBuckets: one pipeline of script
// calls, sent by digest and once more with the source for a store that
// forgot the script (NOSCRIPT). No spends is a PING.
func (s *Store) Reconcile(ctx context.Context, spends []ratelimit.Spend) ([]ratelimit.Budget, error) {
	if len(spends) == 0 {
		if err := s.opts.Client.Ping(ctx).Err(); err != nil {
			return nil, fmt.Errorf("breaker store PING: %w", err)
		}
		return nil, nil
	}
	cmds := s.send(ctx, spends, nil)
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		s.send(ctx, spends, func(i int) bool { return slices.Contains(again, i) }, cmds...)
	}
	out := make([]ratelimit.Budget, len(spends))
	for i, c := range cmds {
		b, err := parse(c)
		if err != nil {
			return nil, fmt.Errorf("rate-limit bucket %q of route %q: %w", spends[i].Key, spends[i].Route, err)
		}
		out[i] = b
	}
	return out, nil
}

// send pipelines the script for the spends (those only picks when not
// nil, by source instead of digest, into cmds).
func (s *Store) send(ctx context.Context, spends []ratelimit.Spend, only func(int) bool, cmds ...*redis.Cmd) []*redis.Cmd {
	pipe := s.opts.Client.Pipeline()
	if cmds == nil {
		cmds = make([]*redis.Cmd, len(spends))
	}
	for i, sp := range spends {
		if only != nil && !only(i) {
			continue
		}
		tag := s.opts.Prefix + "rl:{" + sp.Route + "}:"
		keys := []string{tag + sp.Key, tag + "replicas"}
		args := []any{sp.Spent, strconv.FormatFloat(sp.Rate, 'g', -1, 64), sp.Burst, s.opts.Replica, s.opts.Live.Milliseconds(), ttl(sp).Milliseconds()}
		if only == nil {
			cmds[i] = script.EvalSha(ctx, pipe, keys, args...)
		} else {
			cmds[i] = script.Eval(ctx, pipe, keys, args...)
		}
	}
	_, _ = pipe.Exec(ctx)
	return cmds
}

// ttl is how long a bucket outlives its last reconciliation: twice its
// refill time, at least minTTL.
func ttl(sp ratelimit.Spend) time.Duration {
	if sp.Rate <= 0 {
		return minTTL
	}
	return max(minTTL, time.Duration(2*float64(sp.Burst)/sp.Rate*float64(time.Second)))
}

// parse reads one script reply.
func parse(c *redis.Cmd) (ratelimit.Budget, error) {
	v, err := c.Slice()
	if err != nil {
		return ratelimit.Budget{}, err
	}
	if len(v) != 2 {
		return ratelimit.Budget{}, fmt.Errorf("reply %v: want 2 values", v)
	}
	ts, ok1 := v[0].(string)
	n, ok2 := v[1].(int64)
	tokens, err := strconv.ParseFloat(ts, 64)
	if !ok1 || !ok2 || err != nil || n < 1 {
		return ratelimit.Budget{}, fmt.Errorf("reply %v: want tokens and a replica count", v)
	}
	return ratelimit.Budget{Tokens: tokens, Replicas: int(n)}, nil
}
