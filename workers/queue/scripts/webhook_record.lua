-- Record a delivery attempt on the job (never re-creating an expired record), then schedule the
-- next try at ARGV[3], or drop the job from the due set when ARGV[3] is ''.
-- KEYS: job, due
-- ARGV: job_id, webhook_json, next_at
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'webhook', ARGV[2])
end
if ARGV[3] ~= '' and redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
else
  redis.call('ZREM', KEYS[2], ARGV[1])
end
return 1
