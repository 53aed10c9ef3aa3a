-- Commit the end of a run (succeeded or failed) if this consumer still owns the current attempt.
-- Returns the ended record as stored (kept as the job's outcome for recovery), or 0 when fenced.
-- KEYS: job, stream, events, counters, webhooks_due, jobs_index
-- ARGV: group, consumer, entry, attempt, state, fields_json, now, ttl, job_ttl
local st = redis.call('HMGET', KEYS[1], 'state', 'owner', 'attempt', 'entry')
local mine = st[2] == ARGV[2] and st[3] == ARGV[4] and st[4] == ARGV[3]
if mine and st[1] == 'succeeded' and ARGV[5] == 'succeeded' then
  -- this very commit again: its answer was lost and the worker sent it once more. Only this
  -- script sets succeeded, so this attempt's success is what the record holds: say so (the
  -- worker would otherwise take it for fenced off and delete the result just committed)
  return redis.call('HGETALL', KEYS[1])
end
if st[1] ~= 'running' or not mine then
  return 0
end
hset_json(KEYS[1], ARGV[6])
redis.call('HSET', KEYS[1], 'state', ARGV[5], 'finished_at', ARGV[7], 'updated_at', ARGV[7])
if ARGV[5] == 'succeeded' then redis.call('HSET', KEYS[1], 'progress', 1, 'stage', 'done') end
drop_entry(KEYS[2], ARGV[1], ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[8])
ended(KEYS[1], KEYS[6], ARGV[7], ARGV[9])
redis.call('HINCRBY', KEYS[4], ARGV[5], 1)
notify_webhook(KEYS[1], KEYS[5], ARGV[7])
emit(KEYS[3], 'state', ARGV[5], 'progress', ARGV[5] == 'succeeded' and '1' or '')
return redis.call('HGETALL', KEYS[1])
