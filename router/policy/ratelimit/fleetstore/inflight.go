package fleetstore

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/levee-proxy/levee/router/policy/inflight"
)

// countScript records one replica's in-flight count of one key and sums
// the other replicas' counts reported within live, forgetting the older
// ones (a replica gone stops counting after live). KEYS: the counter.
// ARGV: replica, count, live (ms). Reply: the others' sum.
var countScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = tonumber(ARGV[2])
local live = tonumber(ARGV[3])
if n > 0 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. now)
else
  redis.call('HDEL', KEYS[1], ARGV[1])
end
local m = redis.call('HGETALL', KEYS[1])
local others = 0
for i = 1, #m, 2 do
  if m[i] ~= ARGV[1] then
    local v = m[i + 1]
    local sep = string.find(v, ':', 1, true)
    if not sep then return redis.error_reply('in-flight count ' .. v .. ' is not count:ms') end
    local c = tonumber(string.sub(v, 1, sep - 1))
    local ts = tonumber(string.sub(v, sep + 1))
    if c == nil or ts == nil then return redis.error_reply('in-flight count ' .. v .. ' is not count:ms') end
    if now - ts <= live then
      others = others + c
    else
      redis.call('HDEL', KEYS[1], m[i])
    end
  end
end
if n > 0 then redis.call('PEXPIRE', KEYS[1], live) end
return others
`)

// Report implements inflight.SharedCounts: one pipeline of script calls,
// sent by digest and once more with the source for a store that forgot
// the script (NOSCRIPT). No counts is a PING.
func (s *Store) Report(ctx context.Context, counts []inflight.Count) ([]int64, error) {
	if len(counts) == 0 {
		if err := s.opts.Client.Ping(ctx).Err(); err != nil {
			return nil, fmt.Errorf("breaker store PING: %w", err)
		}
		return nil, nil
	}
	cmds := s.sendCounts(ctx, counts, nil)
	var again []int
	for i, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		s.sendCounts(ctx, counts, func(i int) bool { return slices.Contains(again, i) }, cmds...)
	}
	out := make([]int64, len(counts))
	for i, c := range cmds {
		n, err := c.Int64()
		if err == nil && n < 0 {
			err = fmt.Errorf("reply %d: want a count", n)
		}
		if err != nil {
			return nil, fmt.Errorf("in-flight counter %q of route %q: %w", counts[i].Key, counts[i].Route, err)
		}
		out[i] = n
	}
	return out, nil
}

// sendCounts pipelines the script for the counts (those only picks when
// not nil, by source instead of digest, into cmds).
func (s *Store) sendCounts(ctx context.Context, counts []inflight.Count, only func(int) bool, cmds ...*redis.Cmd) []*redis.Cmd {
	pipe := s.opts.Client.Pipeline()
	if cmds == nil {
		cmds = make([]*redis.Cmd, len(counts))
	}
	for i, c := range counts {
		if only != nil && !only(i) {
			continue
		}
		keys := []string{s.opts.Prefix + "if:{" + c.Route + "}:" + c.Key}
		args := []any{s.opts.Replica, c.InFlight, s.opts.Live.Milliseconds()}
		if only == nil {
			cmds[i] = countScript.EvalSha(ctx, pipe, keys, args...)
		} else {
			cmds[i] = countScript.Eval(ctx, pipe, keys, args...)
		}
	}
	_, _ = pipe.Exec(ctx)
	return cmds
}
