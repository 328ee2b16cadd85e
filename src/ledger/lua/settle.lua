-- KEYS: epoch, account, key, own holds, own swept holds, account queue, key queue; and the
-- session, for a hold under a capped session. ARGV: epoch, hold, charge, channel, account id,
-- key id, nanodollars charged, month. A hold swept while its instance seemed dead only adds
-- its charge: what it held was released already.

local from = KEYS[4]
local e = redis.call('HGET', from, ARGV[2])
if not e then
  from = KEYS[5]
  e = redis.call('HGET', from, ARGV[2])
end
if not e then return {'none'} end
redis.call('HDEL', from, ARGV[2])
local _a, _k, tokens, fa, fk, an, kn = string.match(e, HOLD)
local charge, nanos, month = tonumber(ARGV[3]), tonumber(ARGV[7]), ARGV[8]
local function close(s, flag, held)
  if flag ~= '1' or redis.call('EXISTS', s) == 0 then return end
  if from == KEYS[4] then
    redis.call('HINCRBY', s, 'r', int(-tonumber(tokens)))
    if tonumber(held) > 0 then redis.call('HINCRBY', s, 'rn', int(-tonumber(held))) end
  end
  if charge > 0 then redis.call('HINCRBY', s, 'u', int(charge)) end
  if nanos > 0 then
    redis.call('HINCRBY', s, 'st', int(nanos))
    -- as the record writer counts it in the store: a new month's first charge restarts the month
    if redis.call('HGET', s, 'mk') == month then
      redis.call('HINCRBY', s, 'sm', int(nanos))
    else
      redis.call('HSET', s, 'sm', int(nanos), 'mk', month)
    end
  end
  if tonumber(redis.call('HGET', s, 'r')) <= 0 then redis.call('PEXPIRE', s, SUBJECT_TTL_MS) end
end
close(KEYS[2], fa, an)
close(KEYS[3], fk, kn)
if KEYS[8] then
  local _s, fs, sn = string.match(e, HOLD_SESSION)
  if fs then close(KEYS[8], fs, sn) end
end
if redis.call('ZCARD', KEYS[6]) + redis.call('ZCARD', KEYS[7]) > 0 then
  redis.call('PUBLISH', ARGV[4], ARGV[5] .. ' ' .. ARGV[6])
end
return {'ok'}
