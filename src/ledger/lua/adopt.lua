-- KEYS: epoch, account, key, own holds, instances with holds. ARGV: epoch, hold, account,
-- key, tokens, quota, limit, instance, nanodollars held against the account's budget and the
-- key's, the account's budget (-1: none) and period, the key's, month. Counts the hold in the
-- subjects seeded without it.

if redis.call('HEXISTS', KEYS[4], ARGV[2]) == 1 then return {'ok'} end
local tokens, quota, limit = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local an, kn, month = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[15]
local a = fields(KEYS[2])
local k = fields(KEYS[3])
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
local fa, fk = '0', '0'
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
redis.call('HSET', KEYS[4], ARGV[2],
  ARGV[3] .. ' ' .. ARGV[4] .. ' ' .. ARGV[5] .. ' ' .. fa .. ' ' .. fk .. ' ' .. int(an) .. ' ' .. int(kn))
redis.call('SADD', KEYS[5], ARGV[8])
return {'ok'}
