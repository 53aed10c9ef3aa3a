-- Take up to ARGV[3] webhook deliveries due by ARGV[1]: each moves to ARGV[2] (a lease), so a
-- dispatcher that dies mid-delivery leaves it to another once the lease has passed.
-- KEYS: due
-- ARGV: now, lease_until, limit
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id)
end
return ids
