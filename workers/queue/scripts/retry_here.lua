-- Run a job again at once under the same owner and stream entry, with the next attempt number
-- (its compute child died; the supervisor lives and has a new child): no trip to the back of the
-- queue. After the last attempt the job fails for good and is dead-lettered, as in requeue.lua.
-- KEYS: job, stream, events, counters, webhooks_due, dead, jobs_index
-- ARGV: group, consumer, entry, attempt, now, max_attempts, error_json, ttl, job_id, job_ttl
local st = redis.call('HMGET', KEYS[1], 'state', 'owner', 'attempt', 'entry', 'releases')
if st[1] ~= 'running' or st[2] ~= ARGV[2] or st[3] ~= ARGV[4] or st[4] ~= ARGV[3] then
  return {'stale', ''}
end
redis.call('HSET', KEYS[1], 'last_error', ARGV[7], 'updated_at', ARGV[5])
if tonumber(st[3]) - tonumber(st[5] or '0') >= tonumber(ARGV[6]) then
  drop_entry(KEYS[2], ARGV[1], ARGV[3])
  redis.call('HSET', KEYS[1], 'state', 'failed', 'error', ARGV[7], 'finished_at', ARGV[5])
  redis.call('EXPIRE', KEYS[1], ARGV[8])
  ended(KEYS[1], KEYS[7], ARGV[5], ARGV[10])
  redis.call('ZADD', KEYS[6], ARGV[5], ARGV[9])
  redis.call('HINCRBY', KEYS[4], 'dead_lettered', 1)
  redis.call('HINCRBY', KEYS[4], 'failed', 1)
  notify_webhook(KEYS[1], KEYS[5], ARGV[5])
  emit(KEYS[3], 'state', 'failed')
  return {'failed', ''}
end
local attempt = tonumber(st[3]) + 1
redis.call('HSET', KEYS[1], 'attempt', attempt, 'stage', 'retrying', 'attempt_started_at', ARGV[5])
redis.call('XCLAIM', KEYS[2], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
redis.call('HINCRBY', KEYS[4], 'retried', 1)
emit(KEYS[3], 'state', 'running', 'attempt', tostring(attempt), 'worker', ARGV[2])
return {'ok', tostring(attempt)}
