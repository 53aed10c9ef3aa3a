-- Cancel a queued or running job. A running job's worker finds out at its next renewal (its
-- attempt can no longer commit). Terminal states never change. Returns the outcome, the state
-- before and the record as it now is (the API answers with it; a cancel's outcome is kept).
-- KEYS: job, stream, events, counters, webhooks_due, jobs_index
-- ARGV: group, now, ttl, job_ttl
local st = redis.call('HMGET', KEYS[1], 'state', 'entry')
if not st[1] then return {'gone', ''} end
if st[1] ~= 'queued' and st[1] ~= 'running' then
  return {'final', st[1], redis.call('HGETALL', KEYS[1])}
end
redis.call('HSET', KEYS[1], 'state', 'cancelled', 'finished_at', ARGV[2], 'updated_at', ARGV[2])
drop_entry(KEYS[2], ARGV[1], st[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
ended(KEYS[1], KEYS[6], ARGV[2], ARGV[4])
redis.call('HINCRBY', KEYS[4], 'cancelled', 1)
notify_webhook(KEYS[1], KEYS[5], ARGV[2])
emit(KEYS[3], 'state', 'cancelled')
return {'cancelled', st[1], redis.call('HGETALL', KEYS[1])}
