-- A token bucket kept by Redis for every replica (mcp-chain [state]):
-- taken from atomically, on the server's clock.
-- KEYS[1]: the bucket (a hash: tokens, at).
-- ARGV[1]: tokens earned per second; ARGV[2]: burst (it starts full);
-- ARGV[3]: the longest wait, in microseconds, a token may be reserved for
-- (-1: none, take now or refuse).
-- Answers {"1", wait_us} (taken or reserved) or {"0", retry_after_us}.
local per_us = tonumber(ARGV[1]) / 1e6
local burst = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1e6 + tonumber(time[2])
local kept = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(kept[1]) or burst
local at = tonumber(kept[2]) or now
if now > at then
  tokens = math.min(burst, tokens + (now - at) * per_us)
  at = now
end
local wait = 0
if tokens + 1e-9 < 1 then
  wait = (1 - tokens) / per_us
  if max_wait < 0 or wait > max_wait then
    return {'0', string.format('%.0f', math.ceil(wait))}
  end
end
tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', string.format('%.9f', tokens), 'at', string.format('%.0f', at))
-- Once full again the bucket is what a missing one is: let it go.
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / per_us / 1000) + 1000)
return {'1', string.format('%.0f', math.ceil(wait))}
