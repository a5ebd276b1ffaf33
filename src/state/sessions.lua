-- A caller's sessions, counted for every replica (mcp-chain [state],
-- [front] max_sessions_per_principal), on the server's clock.
-- KEYS[1]: the caller's sessions (a sorted set: a session's digest, and
-- when its lease ends, in milliseconds).
-- ARGV[1]: "open" or "renew"; ARGV[2]: the lease, in milliseconds;
-- "open": ARGV[3] the most the caller may hold, ARGV[4] the new session;
-- answers 1 when it was let in, 0 when the caller holds the most already.
-- "renew": ARGV[3..] the sessions a replica still holds; answers how many.
-- Leases that ended (a replica that died) are dropped before counting.
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lease = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[1] == 'open' then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
    return 0
  end
  redis.call('ZADD', KEYS[1], now + lease, ARGV[4])
  redis.call('PEXPIRE', KEYS[1], lease)
  return 1
end
for i = 3, #ARGV do
  redis.call('ZADD', KEYS[1], now + lease, ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], lease)
return #ARGV - 2
