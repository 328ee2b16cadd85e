-- Closes holds of one instance, each with its charge: the holds of a records commit in one
-- round trip (or one hold). KEYS: epoch, the instance's holds, its swept holds; then per hold
-- its account, key, account queue, key queue and, for a hold under a capped session, the
-- session. ARGV: epoch, channel, month, then per hold: hold, charge, nanodollars charged,
-- account id, key id, '1' when it has a session key. A hold swept while its instance seemed
-- dead only adds its charge: what it held was released already. A hold not found (closed
-- before, or of an epoch Redis lost) changes nothing.

local channel, month = ARGV[2], ARGV[3]

-- One subject's part of a close: what the hold held there goes (unless swept), the charge comes.
-- Each command a script calls costs Redis more in Lua and its bridge than in the command
-- (decision 0044): what one answers is not asked again.
local function close(s, flag, held, tokens, own, charge, nanos)
  if flag ~= '1' or redis.call('EXISTS', s) == 0 then return end
  local holds
  if own then
    holds = redis.call('HINCRBY', s, 'r', int(-tonumber(tokens)))
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
  if (holds or tonumber(redis.call('HGET', s, 'r'))) <= 0 then redis.call('PEXPIRE', s, SUBJECT_TTL_MS) end
end

local k = 4
for a = 4, #ARGV, 6 do
  local hold, charge, nanos = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local account, key, aq, kq = KEYS[k], KEYS[k + 1], KEYS[k + 2], KEYS[k + 3]
  local session = nil
  if ARGV[a + 5] == '1' then session = KEYS[k + 4] end
  k = k + (session and 5 or 4)
  local from = KEYS[2]
  local e = redis.call('HGET', from, hold)
  if not e then
    from = KEYS[3]
    e = redis.call('HGET', from, hold)
  end
  if e then
    redis.call('HDEL', from, hold)
    local own = from == KEYS[2]
    local _a, _k, tokens, fa, fk, an, kn = string.match(e, HOLD)
    close(account, fa, an, tokens, own, charge, nanos)
    close(key, fk, kn, tokens, own, charge, nanos)
    if session then
      local _s, fs, sn = string.match(e, HOLD_SESSION)
      if fs then close(session, fs, sn, tokens, own, charge, nanos) end
    end
    -- an empty queue is no key at all: one command asks whether anyone waits on either
    if redis.call('EXISTS', aq, kq) > 0 then
      redis.call('PUBLISH', channel, ARGV[a + 3] .. ' ' .. ARGV[a + 4])
    end
  end
end
return {'ok'}
