-- KEYS: epoch, account queue, key queue, waiter expiries. ARGV: epoch, waiter, channel, account, key.

redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('HDEL', KEYS[4], ARGV[2])
if redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3]) > 0 then
  redis.call('PUBLISH', ARGV[3], ARGV[4] .. ' ' .. ARGV[5])
end
return {'ok'}
