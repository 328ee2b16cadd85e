-- KEYS: epoch, the subject, instances with holds, holds hashes. ARGV: epoch, 'a', 'k' or 's'
-- (a capped session), its consumption, its spending in total, in the month, the month, n, then
-- per journaled hold: index of its holds hash in KEYS, hold, account, key, tokens, instance,
-- nanodollars held against the account's budget, against the key's, its session ('' : none),
-- nanodollars held against the session's budget. Kept when another instance seeded it first.

if redis.call('EXISTS', KEYS[2]) == 1 then return {'exists'} end
local r, rn = 0, 0
for i = 0, tonumber(ARGV[7]) - 1 do
  local b = 8 + i * 10
  local hk, id = KEYS[tonumber(ARGV[b])], ARGV[b + 1]
  local fa, fk, fs = '0', '0', '0'
  local e = redis.call('HGET', hk, id)
  if e then
    local _a, _k, _t, ea, ek = string.match(e, HOLD)
    fa, fk = ea, ek
    local _s, es = string.match(e, HOLD_SESSION)
    if es then fs = es end
  end
  if ARGV[2] == 'a' then
    fa = '1'
    rn = rn + tonumber(ARGV[b + 6])
  elseif ARGV[2] == 'k' then
    fk = '1'
    rn = rn + tonumber(ARGV[b + 7])
  else
    fs = '1'
    rn = rn + tonumber(ARGV[b + 9])
  end
  local entry = ARGV[b + 2] .. ' ' .. ARGV[b + 3] .. ' ' .. ARGV[b + 4] .. ' ' .. fa .. ' ' .. fk
    .. ' ' .. ARGV[b + 6] .. ' ' .. ARGV[b + 7]
  if ARGV[b + 8] ~= '' then entry = entry .. ' ' .. ARGV[b + 8] .. ' ' .. fs .. ' ' .. ARGV[b + 9] end
  redis.call('HSET', hk, id, entry)
  redis.call('SADD', KEYS[3], ARGV[b + 5])
  r = r + tonumber(ARGV[b + 4])
end
redis.call('HSET', KEYS[2], 'u', ARGV[3], 'r', int(r), 'st', ARGV[4], 'sm', ARGV[5], 'mk', ARGV[6], 'rn', int(rn))
if r <= 0 then redis.call('PEXPIRE', KEYS[2], SUBJECT_TTL_MS) end
return {'ok'}
