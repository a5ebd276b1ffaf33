-- A reserved token given back (its request was cancelled while it waited).
-- KEYS[1]: the bucket; ARGV[1]: tokens per second; ARGV[2]: burst.
local per_us = tonumber(ARGV[1]) / 1e6
local burst = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1e6 + tonumber(time[2])
local kept = redis.call('HMGET', KEYS[1], 'tokens', 'at')
if not kept[1] then
  return {'0', '0'}
end
local tokens = tonumber(kept[1])
local at = tonumber(kept[2]) or now
if now > at then
  tokens = math.min(burst, tokens + (now - at) * per_us)
  at = now
end
tokens = math.min(burst, tokens + 1)
redis.call('HSET', KEYS[1], 'tokens', string.format('%.9f', tokens), 'at', string.format('%.0f', at))
return {'1', '0'}
