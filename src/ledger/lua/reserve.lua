-- KEYS: epoch, account, key, own holds, account queue, key queue, waiter expiries, waiter
-- sequence, instances with holds; and the session, only for a call under its key's per-session
-- caps. ARGV: epoch, quota, limit (-1: none), wanted, minimum, waiter ('' for a first
-- attempt), wait ms, hold id, account id, key id, channel, instance, the cost rule's fixed
-- ('' : the call costs nothing), per token and prompt tokens, month, the account's budget
-- (-1: none) and period, the key's; with a session: its id, its token cap and budget (-1: none).
-- Answers: 'seed', what needs seeding ('a', 'k', 's') and Redis's clock (ms), or: status, tokens, remaining, reason, consumption of account and key, waiter, nanos
-- held (-1: no budget applies), held against the account's and the key's budget, spending of
-- account and key, held against the session's budget.

local a = fields(KEYS[2])
local k = fields(KEYS[3])
local capped = KEYS[10] ~= nil
local s = {}
if capped then s = fields(KEYS[10]) end
if not a[1] or not k[1] or (capped and not s[1]) then
  local need = ''
  if not a[1] then need = 'a' end
  if not k[1] then need = need .. 'k' end
  if capped and not s[1] then need = need .. 's' end
  return {'seed', need, clock()}
end
local au, ar, ku, kr = tonumber(a[1]), tonumber(a[2]), tonumber(k[1]), tonumber(k[2])
local ast, kst = tonumber(a[3]), tonumber(k[3])
local quota, limit = tonumber(ARGV[2]), tonumber(ARGV[3])
local wanted, minimum = tonumber(ARGV[4]), tonumber(ARGV[5])
local wid, waitMs = ARGV[6], tonumber(ARGV[7])
local priced = ARGV[13] ~= ''
local fixed, per, prompt, month = tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15]), ARGV[16]
-- What each limit leaves, in tokens (a budget: what its money pays for): by consumption alone
-- (free; the tightest names a refusal and what it leaves in its own unit, the first of quota,
-- key limit, account budget, key budget on a tie), and with what calls in flight hold (room).
local free, left, why = quota - au, quota - au, 'quota'
local room = free - ar
local function limitBy(t, held, l, reason)
  if t < free then free, left, why = t, l, reason end
  if held < room then room = held end
end
if limit >= 0 then limitBy(limit - ku, limit - ku - kr, limit - ku, 'key_limit') end
local aleft, kleft
if priced then
  aleft = budgetLeft(a, tonumber(ARGV[17]), ARGV[18], month)
  kleft = budgetLeft(k, tonumber(ARGV[19]), ARGV[20], month)
  if aleft then
    limitBy(tokensFor(fixed, per, prompt, aleft), tokensFor(fixed, per, prompt, aleft - tonumber(a[6])), aleft,
      'account_budget')
  end
  if kleft then
    limitBy(tokensFor(fixed, per, prompt, kleft), tokensFor(fixed, per, prompt, kleft - tonumber(k[6])), kleft,
      'key_budget')
  end
end
-- the session's caps last: a tie names the key's or the account's limit
local sleft
if capped then
  local slimit, sbudget = tonumber(ARGV[22]), tonumber(ARGV[23])
  local su = tonumber(s[1])
  if slimit >= 0 then limitBy(slimit - su, slimit - su - tonumber(s[2]), slimit - su, 'session_limit') end
  if priced and sbudget >= 0 then
    sleft = sbudget - tonumber(s[3])
    limitBy(tokensFor(fixed, per, prompt, sleft), tokensFor(fixed, per, prompt, sleft - tonumber(s[6])), sleft,
      'session_budget')
  end
end
local function leave()
  if wid == '' then return end
  redis.call('ZREM', KEYS[5], wid)
  redis.call('ZREM', KEYS[6], wid)
  redis.call('HDEL', KEYS[7], wid)
  if redis.call('ZCARD', KEYS[5]) + redis.call('ZCARD', KEYS[6]) > 0 then
    redis.call('PUBLISH', ARGV[11], ARGV[9] .. ' ' .. ARGV[10])
  end
end
if free < minimum then
  leave()
  return {'refused', 0, left, why, au, ku, '', -1, 0, 0, ast, kst, 0}
end
local function before(q)
  local now = clock()
  while true do
    local head = redis.call('ZRANGE', q, 0, 0)[1]
    if not head or head == wid then return false end
    if tonumber(redis.call('HGET', KEYS[7], head) or '0') > now then return true end
    redis.call('ZREM', q, head)
    redis.call('HDEL', KEYS[7], head)
  end
end
-- Whether a waiter is ahead of this call in either queue. An empty queue is no key at all, so
-- one command answers for both when no one waits (the common case): each command a script
-- calls costs Redis more in Lua and its bridge than in the command (decision 0044).
local function waitersAhead()
  return redis.call('EXISTS', KEYS[5], KEYS[6]) > 0 and (before(KEYS[5]) or before(KEYS[6]))
end
if room >= minimum and not waitersAhead() then
  local got = math.min(wanted, room)
  local nanos, an, kn, sn = -1, 0, 0, 0
  if priced and (aleft or kleft or sleft) then
    nanos = nanosFor(fixed, per, prompt, got)
    if aleft then an = nanos end
    if kleft then kn = nanos end
    if sleft then sn = nanos end
  end
  redis.call('HINCRBY', KEYS[2], 'r', int(got))
  redis.call('HINCRBY', KEYS[3], 'r', int(got))
  if an > 0 then redis.call('HINCRBY', KEYS[2], 'rn', int(an)) end
  if kn > 0 then redis.call('HINCRBY', KEYS[3], 'rn', int(kn)) end
  -- Only a subject that held nothing can have a time to live: seeds and closes give one to
  -- a subject left holding nothing, and every hold takes it away (decision 0045).
  if ar <= 0 then redis.call('PERSIST', KEYS[2]) end
  if kr <= 0 then redis.call('PERSIST', KEYS[3]) end
  local entry = ARGV[9] .. ' ' .. ARGV[10] .. ' ' .. int(got) .. ' 1 1 ' .. int(an) .. ' ' .. int(kn)
  if capped then
    redis.call('HINCRBY', KEYS[10], 'r', int(got))
    if sn > 0 then redis.call('HINCRBY', KEYS[10], 'rn', int(sn)) end
    if tonumber(s[2]) <= 0 then redis.call('PERSIST', KEYS[10]) end
    entry = entry .. ' ' .. ARGV[21] .. ' 1 ' .. int(sn)
  end
  redis.call('HSET', KEYS[4], ARGV[8], entry)
  redis.call('SADD', KEYS[9], ARGV[12])
  leave()
  return {'ok', got, left, why, au, ku, '', nanos, an, kn, ast, kst, sn}
end
if waitMs <= 0 then
  leave()
  return {'held', 0, left, why, au, ku, '', -1, 0, 0, ast, kst, 0}
end
if wid == '' then
  wid = tostring(redis.call('INCR', KEYS[8]))
  redis.call('ZADD', KEYS[5], tonumber(wid), wid)
  redis.call('ZADD', KEYS[6], tonumber(wid), wid)
end
redis.call('HSET', KEYS[7], wid, int(clock() + waitMs))
return {'wait', 0, left, why, au, ku, wid, -1, 0, 0, ast, kst, 0}
