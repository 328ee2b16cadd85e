-- KEYS: epoch, the dead instance's holds, its swept holds, instances with holds, then the
-- subjects. ARGV: epoch, instance, channel, n, then per hold: id, index of its account, of
-- its key and of its capped session (0: none) in KEYS. Releases the holds, tokens and money
-- (moved to the swept ones, where a late settle finds them).

local released = 0
for i = 0, tonumber(ARGV[4]) - 1 do
  local id = ARGV[5 + i * 4]
  local e = redis.call('HGET', KEYS[2], id)
  if e then
    local _a, _k, tokens, fa, fk, an, kn = string.match(e, HOLD)
    local subjects = {{fa, tonumber(ARGV[6 + i * 4]), an}, {fk, tonumber(ARGV[7 + i * 4]), kn}}
    local _s, fs, sn = string.match(e, HOLD_SESSION)
    local si = tonumber(ARGV[8 + i * 4])
    if fs and si > 0 then table.insert(subjects, {fs, si, sn}) end
    for _, t in ipairs(subjects) do
      local s = KEYS[t[2]]
      if t[1] == '1' and redis.call('EXISTS', s) == 1 then
        redis.call('HINCRBY', s, 'r', int(-tonumber(tokens)))
        if tonumber(t[3]) > 0 then redis.call('HINCRBY', s, 'rn', int(-tonumber(t[3]))) end
        if tonumber(redis.call('HGET', s, 'r')) <= 0 then redis.call('PEXPIRE', s, SUBJECT_TTL_MS) end
      end
    end
    redis.call('HSET', KEYS[3], id, e)
    redis.call('HDEL', KEYS[2], id)
    released = released + tonumber(tokens)
  end
end
redis.call('PEXPIRE', KEYS[3], 3600000)
if redis.call('HLEN', KEYS[2]) == 0 then redis.call('SREM', KEYS[4], ARGV[2]) end
redis.call('PUBLISH', ARGV[3], '')
return {'ok', released}
