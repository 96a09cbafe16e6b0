package fleet

import "github.com/redis/go-redis/v9"

// The flush script's arguments, in ARGV order (1-based in Lua). Keys:
// KEYS[1] state hash, KEYS[2] window hash, KEYS[3] counts hash, KEYS[4]
// lease hash, KEYS[5] the batch id key.
const (
	argReplica = iota
	argThreshold
	argMinRequests
	argWindowMS
	argConsecutive
	argSlowThreshold
	argCooldownMS
	argMaxCooldownMS
	argProbes
	argSuccessesToClose
	argProbeTimeoutMS
	argJitter
	argParamsHash
	argParamsVersion
	argSuccesses
	argFailures
	argNeutral
	argEpoch
	argWindowTotal
	argWindowFailures
	argWindowSlow
	argStreak
	argBroken
	argProbeSuccesses
	argProbeFailures
	argProbesDone
	argWantProbes
	argRand
	argChannel
	argName
	argKeepMS
	argBatchTTLMS
	argCount // number of arguments
)

// flushScript applies one replica's batch for one breaker atomically and
// answers the fleet state. It is the only writer of a breaker's window and
// the only place a trip, a half-open or a close by probes is decided.
//
// Reply: {state, gen, open_remaining_ms, forced, trips, granted, dup,
// mismatch, win_total, win_failures, win_slow, consec, rule (of the last transition), stored_version}.
var flushScript = redis.NewScript(`
local st, win, cnt, lease, batch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local A = ARGV
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local keep = tonumber(A[31])

-- Parameters: the store keeps one set per breaker; a replica's differing
-- set replaces it only if its version is newer.
local cur = redis.call('HMGET', st, 'ph', 'pv')
local mismatch = 0
if not cur[1] or (cur[1] ~= A[13] and tonumber(A[14]) > (tonumber(cur[2]) or -1)) then
  redis.call('HSET', st, 'ph', A[13], 'pv', A[14], 'thr', A[2], 'minr', A[3], 'winms', A[4],
    'cfn', A[5], 'slowthr', A[6], 'cool', A[7], 'maxcool', A[8], 'probes', A[9], 's2c', A[10],
    'pto', A[11], 'jit', A[12])
elseif cur[1] ~= A[13] then
  mismatch = 1
end
local P = redis.call('HMGET', st, 'thr', 'minr', 'winms', 'cfn', 'slowthr', 'cool', 'maxcool',
  'probes', 's2c', 'pto', 'jit', 'state', 'gen', 'until', 'forced', 'trips', 'consec', 'psucc', 'pv', 'lrule')
local thr, minr, winms, cfn, slowthr = tonumber(P[1]), tonumber(P[2]), tonumber(P[3]), tonumber(P[4]), tonumber(P[5])
local cool, maxcool, probes, s2c, pto, jit = tonumber(P[6]), tonumber(P[7]), tonumber(P[8]), tonumber(P[9]), tonumber(P[10]), tonumber(P[11])
local state = P[12] or 'closed'
-- A new breaker's generation starts at the store's clock in ms, so that
-- generations keep growing across a store that lost its data.
local gen = tonumber(P[13] or now)
local untilms = tonumber(P[14] or '0')
local forced = P[15] == '1'
local trips = tonumber(P[16] or '0')
local consec = tonumber(P[17] or '0')
local psucc = tonumber(P[18] or '0')
if not (thr and minr and winms and cfn and slowthr and cool and maxcool and probes and s2c and pto and jit
    and gen and untilms and trips and consec and psucc)
    or (state ~= 'closed' and state ~= 'open' and state ~= 'half-open') then
  return redis.error_reply('LEVEE breaker state is not valid')
end

-- rule is that of the last transition, whoever decided it, so that the
-- answer and the announcement name the same rule.
local changed, rule = false, P[20] or ''
local function go(to, r)
  state, gen, changed, rule, psucc = to, gen + 1, true, r, 0
  redis.call('DEL', lease)
  if to ~= 'open' then forced = false end
end
local function trip(r)
  local d = cool
  for i = 1, trips do
    if d >= maxcool then break end
    d = d * 2
  end
  if d > maxcool then d = maxcool end
  d = d + math.floor(jit * (tonumber(A[28]) or 0) * d)
  if trips < 62 then trips = trips + 1 end
  untilms = now + d
  consec = 0
  redis.call('DEL', win)
  go('open', r)
end

-- The window: buckets of a tenth of winms, numbered by store time.
local width = math.max(1, math.floor(winms / 10))
local head = math.floor(now / width)
local function sums()
  local tot, fl, sl = 0, 0, 0
  local all = redis.call('HGETALL', win)
  for i = 1, #all, 2 do
    local idx, kind = string.match(all[i], '^(%d+):(%a)$')
    local v = tonumber(all[i + 1])
    idx = tonumber(idx)
    if not idx or not v or idx <= head - 10 or idx > head then
      redis.call('HDEL', win, all[i])
    elseif kind == 't' then tot = tot + v
    elseif kind == 'f' then fl = fl + v
    elseif kind == 's' then sl = sl + v
    end
  end
  return tot, fl, sl
end

if state == 'open' and not forced and now >= untilms then go('half-open', '') end

local fresh = redis.call('SET', batch, '1', 'NX', 'PX', tonumber(A[32]))
local granted = 0
if fresh then
  local s, f, n = tonumber(A[15]), tonumber(A[16]), tonumber(A[17])
  if s > 0 then redis.call('HINCRBY', cnt, 'success', s) end
  if f > 0 then redis.call('HINCRBY', cnt, 'failure', f) end
  if n > 0 then redis.call('HINCRBY', cnt, 'neutral', n) end
  if tonumber(A[18]) == gen then
    local wt, wf, ws = tonumber(A[19]), tonumber(A[20]), tonumber(A[21])
    if state == 'closed' and wt > 0 then
      redis.call('HINCRBY', win, head .. ':t', wt)
      if wf > 0 then redis.call('HINCRBY', win, head .. ':f', wf) end
      if ws > 0 then redis.call('HINCRBY', win, head .. ':s', ws) end
      if A[23] == '1' then consec = tonumber(A[22]) else consec = consec + tonumber(A[22]) end
      local tot, fl, sl = sums()
      if cfn > 0 and consec >= cfn then trip('consecutive_failures')
      elseif tot >= minr and fl / tot >= thr then trip('error_ratio')
      elseif slowthr > 0 and tot >= minr and sl > 0 and sl / tot >= slowthr then trip('slow_calls')
      end
    elseif state == 'half-open' then
      -- the replica's reported probes free its leases
      local done = tonumber(A[26])
      if done > 0 then
        local all = redis.call('HGETALL', lease)
        local prefix = A[1] .. ':'
        for i = 1, #all, 2 do
          if done > 0 and string.sub(all[i], 1, #prefix) == prefix then
            redis.call('HDEL', lease, all[i])
            done = done - 1
          end
        end
      end
      if tonumber(A[25]) > 0 then
        trip('half_open_probe_failed')
      elseif tonumber(A[24]) > 0 then
        psucc = psucc + tonumber(A[24])
        if psucc >= s2c then
          trips, consec = 0, 0
          redis.call('DEL', win)
          go('closed', '')
        end
      end
    end
    -- probe leases: at most probes live at once; an expired one is free
    local want = tonumber(A[27])
    if state == 'half-open' and want > 0 then
      local live = 0
      local all = redis.call('HGETALL', lease)
      for i = 1, #all, 2 do
        local exp = tonumber(all[i + 1])
        if not exp or exp <= now then redis.call('HDEL', lease, all[i]) else live = live + 1 end
      end
      granted = math.max(0, math.min(probes - live, want))
      for i = 1, granted do
        local id = redis.call('HINCRBY', st, 'lseq', 1)
        redis.call('HSET', lease, A[1] .. ':' .. id, now + pto)
      end
      if granted > 0 then redis.call('PEXPIRE', lease, pto * 2) end
    end
  end
end

redis.call('HSET', st, 'state', state, 'gen', gen, 'until', untilms, 'forced', forced and '1' or '0',
  'trips', trips, 'consec', consec, 'psucc', psucc, 'lrule', rule)
redis.call('PEXPIRE', st, keep)
redis.call('PEXPIRE', cnt, keep)
local wt, wf, ws = 0, 0, 0
if state == 'closed' then
  wt, wf, ws = sums()
  redis.call('PEXPIRE', win, math.max(winms * 2, 1000))
end
local remain = 0
if state == 'open' and not forced then remain = math.max(0, untilms - now) end
if changed then
  redis.call('PUBLISH', A[29], table.concat({'S', A[30], state, gen, remain, forced and 1 or 0, trips, rule}, '\n'))
end
return {state, gen, remain, forced and 1 or 0, trips, granted, fresh and 0 or 1, mismatch, wt, wf, ws, consec, rule,
  tostring(redis.call('HGET', st, 'pv'))}
`)

// controlScript applies an operator's open, close or reset to the fleet's
// state and announces it. KEYS: state, window, lease. ARGV: action, by,
// channel, name, keep ms.
//
// Reply: {state, gen, forced, trips, ctl}; ctl numbers control actions so
// that every replica applies each once.
var controlScript = redis.NewScript(`
local st, win, lease = KEYS[1], KEYS[2], KEYS[3]
local action, by = ARGV[1], ARGV[2]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local P = redis.call('HMGET', st, 'state', 'gen', 'trips', 'forced')
local state = P[1] or 'closed'
local gen = tonumber(P[2] or now)
local trips = tonumber(P[3] or '0')
local forced = P[4] == '1'
if not gen or not trips then return redis.error_reply('LEVEE breaker state is not valid') end
if action == 'open' then
  if state ~= 'open' then gen = gen + 1 end
  state, forced = 'open', true
elseif action == 'close' or action == 'reset' then
  if state ~= 'closed' then gen = gen + 1 end
  state, forced, trips = 'closed', false, 0
  redis.call('DEL', win)
  redis.call('HSET', st, 'consec', 0)
else
  return redis.error_reply('LEVEE unknown action')
end
redis.call('DEL', lease)
local ctl = redis.call('HINCRBY', st, 'ctl', 1)
redis.call('HSET', st, 'state', state, 'gen', gen, 'forced', forced and '1' or '0', 'trips', trips, 'psucc', 0, 'lrule', 'manual')
redis.call('PEXPIRE', st, tonumber(ARGV[5]))
redis.call('PUBLISH', ARGV[3], table.concat({'C', ARGV[4], state, gen, 0, forced and 1 or 0, trips, action, ctl, by}, '\n'))
return {state, gen, forced and 1 or 0, trips, ctl}
`)
