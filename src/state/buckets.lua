-- A token bucket kept by Redis for every replica (mcp-chain [state]):
-- taken from atomically, on the server's clock, by a batch of requests
-- at once (those that came while the last batch was on its way).
-- KEYS[1]: the bucket (a hash: tokens, at).
-- ARGV[1]: tokens earned per second; ARGV[2]: burst (it starts full);
-- ARGV[3]: the longest wait, in microseconds, a token may be reserved for
-- (-1: none, take now or refuse); ARGV[4]: how many requests, in order.
-- Answers, per request, "1" and its wait (taken or reserved) or "0" and
-- when to try again, in microseconds.
local per_us = tonumber(ARGV[1]) / 1e6
local burst = tonumber(ARGV[2])
local max_wait = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1e6 + tonumber(time[2])
local kept = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(kept[1]) or burst
local at = tonumber(kept[2]) or now
if now > at then
  tokens = math.min(burst, tokens + (now - at) * per_us)
  at = now
end
local out = {}
for i = 1, n do
  local wait = 0
  local taken = '1'
  if tokens + 1e-9 < 1 then
    wait = (1 - tokens) / per_us
    if max_wait < 0 or wait > max_wait then
      taken = '0'
    end
  end
  if taken == '1' then
    tokens = tokens - 1
  end
  out[#out + 1] = taken
  out[#out + 1] = string.format('%.0f', math.ceil(wait))
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.9f', tokens), 'at', string.format('%.0f', at))
-- Once full again the bucket is what a missing one is: let it go.
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / per_us / 1000) + 1000)
return out
