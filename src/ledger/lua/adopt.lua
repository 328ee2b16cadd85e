-- KEYS: epoch, account, key, own holds, instances with holds; and the session, for a hold
-- under a capped session. ARGV: epoch, hold, account, key, tokens, quota, limit, instance,
-- nanodollars held against the account's budget and the key's, the account's budget (-1: none)
-- and period, the key's, month; with a session: its id, its token cap and budget (-1: none),
-- nanodollars held against its budget. Counts the hold in the subjects seeded without it.

if redis.call('HEXISTS', KEYS[4], ARGV[2]) == 1 then return {'ok'} end
local tokens, quota, limit = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local an, kn, month = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[15]
local a = fields(KEYS[2])
local k = fields(KEYS[3])
local s = {}
if KEYS[6] then s = fields(KEYS[6]) end
local sn = tonumber(ARGV[19] or '0')
if a[1] and quota - tonumber(a[1]) - tonumber(a[2]) < tokens then return {'no'} end
if k[1] and limit >= 0 and limit - tonumber(k[1]) - tonumber(k[2]) < tokens then return {'no'} end
if a[1] and an > 0 then
  local l = budgetLeft(a, tonumber(ARGV[11]), ARGV[12], month)
  if l and l - tonumber(a[6]) < an then return {'no'} end
end
if k[1] and kn > 0 then
  local l = budgetLeft(k, tonumber(ARGV[13]), ARGV[14], month)
  if l and l - tonumber(k[6]) < kn then return {'no'} end
end
if s[1] then
  local slimit, sbudget = tonumber(ARGV[17]), tonumber(ARGV[18])
  if slimit >= 0 and slimit - tonumber(s[1]) - tonumber(s[2]) < tokens then return {'no'} end
  if sn > 0 and sbudget >= 0 and sbudget - tonumber(s[3]) - tonumber(s[6]) < sn then return {'no'} end
end
local fa, fk, fs = '0', '0', '0'
if a[1] then
  redis.call('HINCRBY', KEYS[2], 'r', int(tokens))
  if an > 0 then redis.call('HINCRBY', KEYS[2], 'rn', int(an)) end
  redis.call('PERSIST', KEYS[2])
  fa = '1'
end
if k[1] then
  redis.call('HINCRBY', KEYS[3], 'r', int(tokens))
  if kn > 0 then redis.call('HINCRBY', KEYS[3], 'rn', int(kn)) end
  redis.call('PERSIST', KEYS[3])
  fk = '1'
end
if s[1] then
  redis.call('HINCRBY', KEYS[6], 'r', int(tokens))
  if sn > 0 then redis.call('HINCRBY', KEYS[6], 'rn', int(sn)) end
  redis.call('PERSIST', KEYS[6])
  fs = '1'
end
local entry = ARGV[3] .. ' ' .. ARGV[4] .. ' ' .. ARGV[5] .. ' ' .. fa .. ' ' .. fk .. ' ' .. int(an) .. ' ' .. int(kn)
if KEYS[6] then entry = entry .. ' ' .. ARGV[16] .. ' ' .. fs .. ' ' .. int(sn) end
redis.call('HSET', KEYS[4], ARGV[2], entry)
redis.call('SADD', KEYS[5], ARGV[8])
return {'ok'}
